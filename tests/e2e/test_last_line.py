"""The workflow's last line says how many runs are invalid and why: a validator that prints
something other than its JSON makes every run invalid, and the line names it and its file."""

from __future__ import annotations

import pytest

from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_every_run_invalid_for_one_validator_is_said_on_the_last_line(tmp_path, pi_installation):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    (project / "demo" / "validators" / "scope.py").write_text(
        '#!/usr/bin/env python3\nprint("all good")\n'
    )
    done = snakemake(project, listing=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (last,) = [line for line in done.stdout.splitlines() if line.startswith("agentab: demo:")]
    assert last == (
        "agentab: demo: 4/4 runs measured (4 invalid); invalid: validator scope: the output of "
        'validators/scope.py is not JSON {"metrics": …}: all good (4 runs); read '
        "results/demo/synthesis.md"
    )
