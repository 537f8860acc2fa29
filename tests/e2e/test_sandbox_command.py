"""`agentab sandbox` is a run's sandbox: the cell's clone with the etalon's environment made in
it (`[etalon] setup`) and `[etalon] path` first on PATH, as the agent's bash has them."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.e2e.workflow import make_project

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def sandbox(scenario, state, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentab.cli", "sandbox", str(scenario), "--cell", "rule-off",
         "--state", str(state), "--run", command],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_the_sandbox_applies_the_etalons_setup_and_path(tmp_path, pi_installation):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1])
    scenario = project / "demo" / "scenario.toml"
    setup = ["python3 -m venv --without-pip .venv", "echo built > built.txt"]
    lines = f"setup = {json.dumps(setup)}\npath = {json.dumps(['.venv/bin'])}\n"
    scenario.write_text(
        re.sub(r'(?m)^(tag = "v1.0".*)$', lambda m: m.group(1) + "\n" + lines, scenario.read_text())
    )
    state = tmp_path / "state"
    state.mkdir()
    (state / "harnesses").symlink_to(pi_installation.root.parents[1])
    done = sandbox(scenario, state, "command -v python; cat built.txt; echo $PATH")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"setup: ran in [0-9.]+s \(2 command\(s\)\)", done.stdout), done.stdout
    inside = done.stdout.split("--- ", 1)[1].splitlines()
    assert inside[1:4] == [
        "/workspace/.venv/bin/python",
        "built",
        "/workspace/.venv/bin:/usr/local/bin:/usr/bin:/bin",
    ], done.stdout
    # A second sandbox of the same commit gets what the first setup made, copied in.
    again = sandbox(scenario, state, "command -v python")
    assert "setup: copied in from an earlier checkout" in again.stdout, again.stdout
    assert again.stdout.rstrip().endswith("/workspace/.venv/bin/python")
    # A failed setup is one line that names the scenario and the key, no traceback.
    scenario.write_text(scenario.read_text().replace("echo built > built.txt", "exit 3"))
    failed = sandbox(scenario, state, "true")
    assert failed.returncode != 0 and "Traceback" not in failed.stderr
    assert "[etalon.setup]" in failed.stderr and "exit status 3" in failed.stderr, failed.stderr
