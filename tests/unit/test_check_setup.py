"""`agentab check --setup` tries the environment whatever else the scenario still lacks: an
offline policy that does not fit the repository yet is reported after the setup ran."""

from __future__ import annotations

import re
from pathlib import Path

from agentab.cli import main
from tests.conftest import make_git_repo
from tests.unit.test_scenario import SEED_MATRIX, scenario_dir, write

__all__ = ["scenario_dir"]  # the fixture, used by name


def test_check_setup_runs_the_setup_though_a_policy_does_not_fit(scenario_dir: Path, capsys):
    # The demo policy edits calc.py's `len(values) - 1`, which this repository does not have.
    make_git_repo(scenario_dir / "own", {"calc.py": "def mean(values):\n    return 0\n"})
    text = SEED_MATRIX.replace('repo = "calc"', 'repo = "own"').replace(
        'tag = "v1.0"', 'tag = "v1.0"\nsetup = ["echo made > built.txt"]'
    )
    state = ["--state", str(scenario_dir.parent / "state")]
    assert main(["check", "--setup", *state, str(write(scenario_dir, text))]) == 2
    err = capsys.readouterr().err
    assert re.search(r"setup      ran in [0-9.]+s; it made built\.txt", err), err
    assert "the offline policy `demo` on etalon tag v1.0" in err
    assert err.index("setup      ran in") < err.index("the offline policy")
