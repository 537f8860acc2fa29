"""A real pi run whose agent names files with any bytes: one that is not UTF-8, one that holds a
newline. The run step crashed sealing run.json on the first, left no record of the attempt,
and the scenario's synthesis never came; now the run has its outcome and its files."""

from __future__ import annotations

import json
import os

import pytest

from agentab.files import seal_holds
from agentab.layout import RunFolder
from tests.e2e.harness_world import (
    PI_VERSION,
    Scenario,
    make_etalon,
    new_world,
    run_step,
    write,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# The shell keeps `\xff` and `\n` for Python, which makes the names of those bytes.
POLICY = """
[policy]
description = "Leaves files named with bytes that are not UTF-8 and with a newline."

[[steps]]
say = "Making the files."
action = "run"
command = '''python3 -c "open(b'bad\\xff.py', 'wb').close(); open('two\\nlines.py', 'w').close()"'''
"""


@pytest.fixture
def world(tmp_path, pi_installation):
    world = new_world(tmp_path)
    make_etalon(world["root"] / "etalon", lambda folder: None)
    return world


def test_a_run_naming_files_with_any_bytes_has_its_outcome_and_a_seal_that_holds(world):
    root = world["root"]
    policy = write(root / "hostile-names.toml", POLICY)
    scenario = Scenario(name="names", question="Any bytes?", harness="pi", version=PI_VERSION)
    done, out = run_step(world, scenario.write_in(root, str(policy), "off", "60s"), "baseline")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    text = (out / "run.json").read_text(encoding="utf-8")
    secret = (RunFolder(out).results.secret).read_text().strip()
    assert seal_holds(text, secret)
    named = {os.fsencode(name) for name in json.loads(text)["patch"]["files"]}
    assert {b"bad\xff.py", b"two\nlines.py"} <= named
    assert not (out / "faults.jsonl").exists()


# 40 MB to the run's model endpoint from the agent's shell, past the bound of a request body.
HUGE_REQUEST = """
[policy]
description = "Sends its model endpoint a request body over the bound."

[[steps]]
say = "Sending."
action = "run"
command = '''python3 -c "
import socket
s = socket.create_connection(('127.0.0.1', 8017))
s.sendall(b'POST /v1/chat/completions HTTP/1.1\\\\r\\\\nHost: x\\\\r\\\\nContent-Type: application/json\\\\r\\\\nContent-Length: 41943040\\\\r\\\\n\\\\r\\\\n')
try:
    for _ in range(40):
        s.sendall(b'{' * 1048576)
except OSError:
    pass
print(s.recv(100))
"'''
"""


def test_a_request_body_over_the_bound_is_refused_unread_and_fails_the_run_at_its_limit(world):
    """The offline model read and logged two 161 MB request bodies, past the run's disk and
    outside its memory cgroup; now a body over the bound is refused (413) from its declared
    length, the log says so, and the run is failed at its limit, never dropped."""
    root = world["root"]
    policy = write(root / "huge-request.toml", HUGE_REQUEST)
    scenario = Scenario(name="huge", question="Bounded?", harness="pi", version=PI_VERSION)
    done, out = run_step(world, scenario.write_in(root, str(policy), "off", "60s"), "baseline")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert record["outcome"]["status"] == "failed"
    assert record["outcome"]["reason"].startswith("limit output")
    assert (out / "model-requests.jsonl").stat().st_size < 1024 * 1024
    lines = [json.loads(line) for line in (out / "model-requests.jsonl").read_text().splitlines()]
    assert [line["reply"]["status"] for line in lines if line.get("over_bound")] == [413]
    assert b"413" in (out / "stream.jsonl").read_bytes()  # what the agent's shell was answered
