"""Built-in run metrics through the real workflow and the real pi: an agent whose commands fail,
as they do on a repository whose interpreter or test runner is missing, is counted and warned
about, and `tool_errors` is scored without any validator."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.e2e.workflow import SNAKEMAKE, make_project, set_agent, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FAILING = """
[policy]
description = "Runs commands that fail, as on an etalon without its environment."

[[steps]]
id = "runner"
action = "run"
command = "zq-no-such-test-runner -q"

[[steps]]
id = "piped"
action = "run"
command = "python3 -m zq_no_such_module; echo done"

[[steps]]
id = "module"
action = "run"
command = "python3 -m zq_no_such_module"

[[steps]]
id = "listing"
action = "run"
command = "ls"

[final]
text = "Done."
"""


def test_failed_tool_calls_are_counted_scored_and_warned_about(tmp_path, pi_installation):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    (project / "demo" / "failing.toml").write_text(FAILING)
    set_agent(project, model="failing.toml", timeout="2m")
    scenario = project / "demo" / "scenario.toml"
    text = scenario.read_text()
    scenario.write_text(re.sub(r"(?m)^metrics = \[", 'metrics = ["tool_errors", ', text))
    result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    measures_files = sorted((project / "results" / "demo" / "runs").glob("*/r01/measures.json"))
    assert len(measures_files) == 4
    for measures_file in measures_files:
        measures = json.loads(measures_file.read_text())
        builtin = measures["builtin"]
        # the runner and the module exit non-zero; the piped one ends in `echo` (exit 0)
        assert builtin["tool_calls"] == 4 and builtin["tool_errors"] == 2, builtin
        assert measures["metrics"]["tool_errors"] == 2  # scored, though no validator returns it
        assert builtin["input_tokens"] > 0 and builtin["duration_s"] > 0
    synthesis = (project / "results" / "demo" / "synthesis.md").read_text()
    # Half is enough to say so (the issue: without setup, exactly half failed and nothing was
    # said), and what failed is named, most first.
    assert (
        "`nothing · off`: 2 of its 4 tool calls failed (built-in `tool_errors`): half of them"
        in synthesis
    )
    assert (
        "what failed most: `python3 -m zq_no_such_module` (1), `zq-no-such-test-runner -q` (1)"
        in synthesis
    )
    runs = subprocess.run(
        [str(SNAKEMAKE.parent / "agentab"), "runs", "results/demo"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "4 (2 failed)" in runs.stdout
    page = project / "results" / "demo" / "report" / "runs" / "nothing-off" / "r01.html"
    assert "<th>tool_errors</th><td>2</td>" in page.read_text()


def test_a_cell_whose_calls_mostly_fail_is_warned_about(tmp_path, pi_installation):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    (project / "demo" / "failing.toml").write_text(
        FAILING.replace('command = "ls"', 'command = "ls zq-absent"')
    )
    set_agent(project, model="failing.toml", timeout="2m")
    result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    synthesis = (project / "results" / "demo" / "synthesis.md").read_text()
    warnings = synthesis.split("## Warnings")[1].split("## Matrix")[0]
    assert "`nothing · off`: 3 of its 4 tool calls failed (built-in `tool_errors`)" in warnings
