"""The etalon's environment (docs/scenario.md) through the real workflow and the real pi: `[etalon]
setup` runs in every fresh checkout with the network, `path` comes first on the agent's and the
validators' PATH, what setup made stays out of the patch, and a failed setup is a fault."""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.e2e.workflow import Counting, make_project, set_agent, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

USES_THE_TOOL = """
[policy]
description = "Runs the tool the etalon's setup installed."

[[steps]]
id = "tool"
action = "run"
command = "zqtool"

[final]
text = "Done."
"""

TOOL_VALIDATOR = """#!/bin/sh
# Scores whether the setup's tool is on this validator's PATH too.
if out=$(zqtool 2>&1); then seen=true; else seen=false; fi
printf '{"metrics": {"tool_seen": %s}, "reasons": {"tool_seen": "%s"}}\\n' "$seen" "$out"
"""


COPIED = re.compile(
    r"setup not run here: copied in \d+\.\d\ds what it made in an earlier checkout of "
    r"[0-9a-f]{12}: [^\n]+ \(that setup ran in [\d.]+s\)\n"
)


def with_setup(project, setup: list[str], path: list[str]) -> None:
    scenario = project / "demo" / "scenario.toml"
    lines = f"setup = {json.dumps(setup)}\npath = {json.dumps(path)}\n"
    text = re.sub(
        r'(?m)^(tag = "v1.0".*)$', lambda m: m.group(1) + "\n" + lines, scenario.read_text()
    )
    scenario.write_text(text)


def test_setup_runs_in_every_checkout_and_its_path_comes_first(tmp_path, pi_installation):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Counting.hits = 0
    port = server.server_address[1]
    with_setup(
        project,
        [
            "mkdir -p tools/bin",
            "printf '#!/bin/sh\\necho tool-from-setup\\n' > tools/bin/zqtool",
            "chmod +x tools/bin/zqtool",
            # the network, which neither the agent nor a validator has
            f"python3 -c \"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/')\"",
            "echo cached > /cache/zq-marker",
        ],
        ["tools/bin"],
    )
    (project / "demo" / "tool.toml").write_text(USES_THE_TOOL)
    set_agent(project, model="tool.toml", timeout="2m")
    validator = project / "demo" / "validators" / "tool.sh"
    validator.write_text(TOOL_VALIDATOR)
    validator.chmod(0o755)
    scenario = project / "demo" / "scenario.toml"
    scenario.write_text(
        scenario.read_text()
        + '\n[validators.tool]\nmode = "script"\nrun = ["validators/tool.sh"]\n'
    )
    try:
        result = snakemake(project)
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    runs = sorted((project / "results" / "demo" / "runs").glob("*/r01"))
    assert len(runs) == 4
    for run in runs:
        assert "tool-from-setup" in (run / "transcript.jsonl").read_text()  # the agent ran it
        assert "tools/" not in (run / "result.patch").read_text()  # setup's files: no work
        tool = json.loads((run / "validators" / "tool.json").read_text())
        assert tool["metrics"] == {"tool_seen": True}, tool
        record = json.loads((run / "run.json").read_text())
        assert record["env"]["PATH"].startswith("/workspace/tools/bin:")
    # setup ran once; every other checkout (each run's clone and each of its 4 script
    # validators') got a copy of what it made
    assert Counting.hits == 1
    logs = [run / "setup.log" for run in runs]
    logs += [log for run in runs for log in (run / "validators").glob("*/setup.log")]
    copied = [log for log in logs if log.read_text().startswith("setup not run here: copied")]
    assert len(logs) == 4 * (1 + 4) and len(copied) == len(logs) - 1
    for log in copied:  # each says its own time, the first setup's said as that setup's
        assert COPIED.fullmatch(log.read_text()), log.read_text()
    # the machine's package-manager configuration that setup read, by name and hash
    for run in runs:
        given = json.loads((run / "run.json").read_text())["setup"]["package_config"]
        if Path("/etc/pip.conf").is_file():
            digest = hashlib.sha256(Path("/etc/pip.conf").read_bytes()).hexdigest()
            assert given["sha256"]["/etc/pip.conf"] == digest
        assert sorted(given["sha256"]) == given["files"]
    assert (project / ".agentab" / "cache" / "zq-marker").read_text() == "cached\n"


def test_a_failed_setup_is_a_fault_with_its_log_kept(tmp_path, pi_installation):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    with_setup(project, ["echo zq-broken-setup", "exit 3"], [])
    result = snakemake(project, "--retries", "0")
    assert result.returncode != 0
    assert "Traceback" not in result.stdout + result.stderr
    run = project / "results" / "demo" / "runs" / "nothing-off" / "r01"
    assert "zq-broken-setup" in (run / "setup.log").read_text()
    faults = (run / "faults.jsonl").read_text()
    assert "the etalon's setup failed (exit status 3): zq-broken-setup" in faults
    assert not (run / "run.json").exists()


def test_a_failed_setup_says_why_in_one_line_a_run_and_the_full_listing_stays_on_disk(
    tmp_path, pi_installation
):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    with_setup(project, ["echo zq-broken-setup; echo", "exit 3"], [])
    result = snakemake(project, "--retries", "0", listing=False)  # as a person runs it
    output = result.stdout + result.stderr
    assert result.returncode != 0
    # agentab's lines, not Snakemake's block per job nor a crash's look for an expected fault.
    for noise in ("CalledProcessError", "localrule", "Error in rule", "Select jobs", "Look above"):
        assert noise not in output, output[-3000:]
    assert len(output.splitlines()) < 25, output
    # Snakemake's full listing is on disk, where its last lines say.
    (log,) = (project / ".snakemake" / "log").glob("*.snakemake.log")
    assert f"Complete log(s): {log}" in output
    full = log.read_text()
    assert full.count("localrule run_agent:") == 4 and full.count("CalledProcessError") == 4
    # One line per failed job (the demo's 4 cells), before the line that says what to do.
    lines = output.splitlines()
    said = [i for i, line in enumerate(lines) if line.startswith("agentab: results/demo/runs/")]
    assert len(said) == 4, output[-3000:]
    for index in said:
        run = lines[index].split("/runs/", 1)[1].split("/logs/", 1)[0]
        assert lines[index].startswith(
            f"agentab: results/demo/runs/{run}/logs/run.log: fault (the job will be redone): the "
            "etalon's setup failed (exit status 3): zq-broken-setup; its output is in "
        ), lines[index]
    assert said == list(range(said[0], said[0] + 4))
    assert lines[said[-1] + 1].startswith("agentab: 4 jobs faulted or were stopped: run the same")


# A setup whose package version comes from the shared cache: what an unpinned dependency does
# when a new release comes out between two runs.
RELEASED_SETUP = [
    "python3 -m venv --without-pip .venv",
    "v=$(cat /cache/zq-version) && d=$(echo .venv/lib/python3*/site-packages)/zqpkg-$v.dist-info"
    " && mkdir -p $d && printf 'Metadata-Version: 2.1\\nName: zqpkg\\nVersion: %s\\n' $v > $d/METADATA",
]


def test_runs_that_got_different_environments_are_flagged_naming_the_package(
    tmp_path, pi_installation
):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    cache = project / ".agentab" / "cache"
    cache.mkdir(parents=True)
    (cache / "zq-version").write_text("1.0\n")
    with_setup(project, RELEASED_SETUP, [".venv/bin"])
    first = snakemake(project)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    results = project / "results" / "demo"
    assert "different environments" not in (results / "synthesis.md").read_text()
    # zqpkg 1.1 is released; the kept environment is made anew; one run is redone.
    (cache / "zq-version").write_text("1.1\n")
    shutil.rmtree(project / ".agentab" / "environments")
    redo = subprocess.run(
        [sys.executable, "-m", "agentab.cli", "redo", "results/demo", "rule-off/r01"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert redo.returncode == 0, redo.stderr
    second = snakemake(project)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    environments = sorted(results.glob("runs/*/r01/environment.txt"))
    assert len(environments) == 4
    assert [("zqpkg==1.1" in path.read_text()) for path in environments] == [
        path.parts[-3] == "rule-off" for path in environments
    ]
    said = (
        "the runs got 2 different environments from the same setup: `rule · off` "
        "(`runs/rule-off/r01`) got another one than the 3 runs of the most common: "
        "`zqpkg==1.1` instead of `zqpkg==1.0`; compare their `environment.txt`"
    )
    assert said in (results / "synthesis.md").read_text()
    report = (results / "report" / "index.html").read_text()
    assert "zqpkg==1.1" in report and "zqpkg==1.0" in report and "rule · off" in report
