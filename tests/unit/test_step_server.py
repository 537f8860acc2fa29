"""The step server: a step handed over runs in a fork of it, exactly as it would have run alone.

Each test starts a real server (`python -m agentab.workflow.step_server`) owned by the test process, and
runs real steps as Snakemake would: `python -m agentab.steps.freeze …` in a child process. A
FIFO as the scenario makes the freeze step wait, so that a signal finds it in the middle.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentab.workflow.step_client import descends_from, step_command
from agentab.workflow.step_server import JUDGE_MODULE, StepServer
from tests.processes import is_running, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "demo" / "scenario.toml"


@pytest.fixture
def server(tmp_path: Path):
    log = tmp_path / "step-server.log"
    server = StepServer.start(["agentab.steps.freeze"], [], log)
    assert wait_until(lambda: "serving" in log.read_text(), 30), log.read_text()
    server.log = log
    yield server
    server.stop(timeout=10)


def freeze(scenario: Path, out: Path, **options) -> subprocess.Popen:
    argv = [sys.executable, "-m", "agentab.steps.freeze", "--scenario", str(scenario)]
    return subprocess.Popen([*argv, "--out", str(out)], text=True, **options)


def forked_steps(server) -> list[int]:
    return [int(pid) for pid in re.findall(r"(?m)^(\d+): agentab\.steps\.", server.log.read_text())]


def forked_by(log: Path) -> list[str]:
    return re.findall(r"(?m)^\d+: agentab\.steps\.\w+ \(forked by (\S+)\)", log.read_text())


def test_a_step_handed_over_does_its_work_in_a_fork_of_the_server(server, tmp_path: Path) -> None:
    out = tmp_path / "frozen" / "scenario.toml"
    step = freeze(SCENARIO, out, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    step.communicate(timeout=30)
    assert step.returncode == 0
    assert out.read_bytes() == SCENARIO.read_bytes()
    [forked] = forked_steps(server)
    assert forked != step.pid


def test_a_step_handed_over_writes_to_its_own_streams_and_exits_with_its_status(
    server, tmp_path: Path
) -> None:
    """The same message and exit status as the step run alone (no server: a fresh process)."""
    missing = tmp_path / "missing.toml"
    warm = freeze(missing, tmp_path / "out.toml", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    warm_out, warm_err = warm.communicate(timeout=30)
    server.stop(timeout=10)
    cold = freeze(missing, tmp_path / "out.toml", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cold_out, cold_err = cold.communicate(timeout=30)
    assert len(forked_steps(server)) == 1  # the first ran in the server, the second alone
    assert warm.returncode == cold.returncode != 0
    assert "missing.toml" in warm_err
    assert (warm_out, warm_err) == (cold_out, cold_err)


def test_a_stop_signal_to_the_step_reaches_its_fork(server, tmp_path: Path) -> None:
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)  # the step waits to read it
    step = freeze(fifo, tmp_path / "out.toml", stderr=subprocess.PIPE)
    assert wait_until(lambda: forked_steps(server), 30)
    [forked] = forked_steps(server)
    time.sleep(0.3)  # the step's stop handler is in place once its arguments are parsed
    step.send_signal(signal.SIGTERM)
    _, err = step.communicate(timeout=30)
    assert step.returncode == 128 + signal.SIGTERM
    assert "agentab: stopped by SIGTERM" in err
    assert not is_running(forked)


def test_a_step_whose_process_is_killed_is_ended_too(server, tmp_path: Path) -> None:
    """kill -9 of the process Snakemake started ends the step, as it would end a step run alone."""
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    step = freeze(fifo, tmp_path / "out.toml")
    assert wait_until(lambda: forked_steps(server), 30)
    [forked] = forked_steps(server)
    step.kill()
    step.wait(timeout=10)
    assert wait_until(lambda: not is_running(forked), 10)


def test_the_server_ends_after_its_steps_once_its_owner_is_done(server, tmp_path: Path) -> None:
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    step = freeze(fifo, tmp_path / "out.toml")
    assert wait_until(lambda: forked_steps(server), 30)
    server.stop(timeout=0.5)  # the owner is done: the server takes no more steps …
    assert server.process.poll() is None  # … and waits for the one in flight
    with open(fifo, "w") as writer:
        writer.write(SCENARIO.read_text())
    assert step.wait(timeout=30) == 0
    assert server.process.wait(timeout=10) == 0
    again = freeze(SCENARIO, tmp_path / "again.toml")
    assert again.wait(timeout=30) == 0  # no server: the step runs in its own process
    assert len(forked_steps(server)) == 1


def test_only_a_step_command_is_handed_over() -> None:
    assert step_command(["python", "-m", "agentab.steps.run", "--rep", "1"]) == [
        "agentab.steps.run",
        "--rep",
        "1",
    ]
    assert step_command(["python", "-X", "importtime", "-m", "agentab.steps.measure"]) == [
        "agentab.steps.measure"
    ]
    assert step_command(["python", "-m", "agentab.cli", "check"]) is None
    assert step_command(["python", "script.py", "-m", "agentab.steps.run"]) is None
    assert step_command(["snakemake", "--cores", "8"]) is None


def test_the_server_serves_only_descendants_of_its_owner() -> None:
    # A child and its own child, not pytest's parent: detached (nohup, a CI runner's shell gone)
    # pytest's parent is init, which the walk up the tree stops before.
    child = subprocess.Popen(
        ["sh", "-c", "sleep 30 & echo $!; wait"], stdout=subprocess.PIPE, text=True
    )
    grandchild = int(child.stdout.readline())
    try:
        assert descends_from(grandchild, os.getpid())
        assert descends_from(grandchild, child.pid)
        assert descends_from(os.getpid(), os.getpid())
        assert not descends_from(os.getpid(), child.pid)
        assert not descends_from(child.pid, grandchild)
        assert not descends_from(1, os.getpid())
    finally:
        os.kill(grandchild, signal.SIGKILL)
        child.kill()
        child.wait()


def test_a_judge_step_is_forked_by_the_server_that_has_the_sdk(tmp_path: Path) -> None:
    """A fork costs by the memory of the process forked: judge steps have a server of their own.
    The demo's `on_task` is a judge, `behaviour` a script; each step fails at once here (no run
    files), which is enough to see which server forked it."""
    log = tmp_path / "step-server.log"
    modules = ["agentab.steps.validate", "agentab.validators.script", JUDGE_MODULE]
    server = StepServer.start(modules, [str(SCENARIO)], log)
    lean = f"agentab-steps-{os.getpid()}"
    try:
        assert wait_until(lambda: f"serving as {lean}-judge" in log.read_text(), 60), (
            log.read_text()
        )
        for validator in ("on_task", "behaviour"):
            step = subprocess.run(
                [sys.executable, "-m", "agentab.steps.validate", "--scenario", str(SCENARIO),
                 "--cell", "nothing-off", "--rep", "1", "--validator", validator,
                 *(f"--{name}={tmp_path / name}" for name in VALIDATE_FILES),
                 "--work-root", str(tmp_path / "work"), "--mirrors-dir", str(tmp_path / "m")],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert step.returncode != 0 and "Traceback" not in step.stderr, step.stderr
    finally:
        server.stop(timeout=10)
    assert forked_by(log) == [f"{lean}-judge", lean]
    assert server.process.returncode == 0


VALIDATE_FILES = ("record", "transcript", "patch", "out", "audit", "lock", "secret")


def test_a_step_outlives_a_killed_server_and_its_process_waits_for_it(
    server, tmp_path: Path
) -> None:
    """Its exit status is lost with the server: a fault (3), said so, and only once the step has
    ended, so that the redo never runs beside it."""
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    step = freeze(fifo, tmp_path / "out.toml", stderr=subprocess.PIPE)
    assert wait_until(lambda: forked_steps(server), 30)
    [forked] = forked_steps(server)
    server.process.kill()
    server.process.wait(timeout=10)
    time.sleep(0.3)
    assert step.poll() is None and is_running(forked)
    with open(fifo, "w") as writer:
        writer.write(SCENARIO.read_text())
    _, err = step.communicate(timeout=30)
    assert step.returncode == 3
    assert "the step server ended before this step did" in err
    assert (tmp_path / "out.toml").read_bytes() == SCENARIO.read_bytes()


SQUATTER = """
import os, socket, sys, time
if os.fork():
    os._exit(0)  # the squatter is orphaned: no longer a descendant of the test
os.setsid()
name, record = sys.argv[1], sys.argv[2]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind("\\0" + name)
listener.listen(8)
with open(record + ".pid.partial", "w") as out:
    out.write(str(os.getpid()))
os.rename(record + ".pid.partial", record + ".pid")  # whole once it has its name
listener.settimeout(20)
connection, _ = listener.accept()
connection.settimeout(2)
try:
    data = connection.recv(65536)
except OSError:
    data = b""
with open(record, "wb") as out:
    out.write(data)
"""


def test_a_socket_of_the_right_name_held_by_a_stranger_gets_nothing(tmp_path: Path) -> None:
    """An abstract socket's name is anyone's to take: a step hands its streams only to a server
    of its own user descended from its Snakemake, and otherwise runs in its own process."""
    record = tmp_path / "received"
    subprocess.run(
        [sys.executable, "-c", SQUATTER, f"agentab-steps-{os.getpid()}", str(record)], check=True
    )
    assert wait_until(Path(f"{record}.pid").exists, 30)
    squatter = int(Path(f"{record}.pid").read_text())
    try:
        out = tmp_path / "frozen.toml"
        step = freeze(SCENARIO, out, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        step.communicate(timeout=60)
        assert step.returncode == 0
        assert out.read_bytes() == SCENARIO.read_bytes()  # done, in its own process
        assert wait_until(record.exists, 30)
        assert record.read_bytes() == b""  # the stranger got neither a request nor a stream
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(squatter, signal.SIGKILL)


def test_the_process_snakemake_starts_for_a_step_imports_next_to_nothing_before_handing_over():
    # Every job of every run pays for these imports; the step itself imports in the server.
    probe = "import sys; b = set(sys.modules); import agentab.steps; print(sorted(set(sys.modules) - b))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    added = set(ast.literal_eval(done.stdout))
    assert added <= {"__future__", "_socket", "_signal", "_struct", "struct", "agentab",
                     "agentab.workflow", "agentab.workflow.step_client", "agentab.steps"}, added  # fmt: skip
