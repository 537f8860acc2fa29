"""An offline policy whose steps would fail on the etalon's tree is refused before anything runs,
by `agentab check` (exit 2) and by the workflow (`agentab: nothing runs.`), the step named: at
run time pi said `Found 2 occurrences of the text` in every run, and the synthesis blamed the
environment."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.e2e.workflow import make_project, set_agent, snakemake

pytestmark = [pytest.mark.e2e]

# The demo's fix, with an old text that calc.py at v1.0 holds three times.
FOUND_THRICE = """
[policy]
description = "The demo's fix, quoting too little of the line."

[[steps]]
id = "read"
action = "read"
path = "calc.py"

[[steps]]
id = "fix"
action = "edit"
path = "calc.py"
old = "values"
new = "xs"

[final]
text = "Done."
"""
SAID = (
    "[steps[2]] the offline policy `thrice.toml` on etalon tag v1.0: step 2 (edit calc.py): "
    "its old text 'values' is found 3 times in calc.py as the tag has it"
)


def test_a_policy_whose_edit_would_fail_is_refused_by_check_and_by_the_workflow(
    tmp_path, pi_installation
):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    (project / "demo" / "thrice.toml").write_text(FOUND_THRICE)
    set_agent(project, model="thrice.toml", timeout="2m")
    check = subprocess.run(
        [sys.executable, "-m", "agentab.cli", "check", "demo/scenario.toml"],
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert check.returncode == 2, check.stdout + check.stderr
    assert SAID in check.stderr and "fix: quote more of the lines" in check.stderr
    result = snakemake(project)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "agentab: nothing runs." in output and SAID in output, output[-3000:]
    assert "Traceback" not in output
    assert not (project / "results" / "demo" / "runs").exists()  # not one run started
    # Fixed, the same scenario runs.
    (project / "demo" / "thrice.toml").write_text(
        FOUND_THRICE.replace('old = "values"', 'old = "len(values) - 1"')
    )
    assert snakemake(project, "-n").returncode == 0
