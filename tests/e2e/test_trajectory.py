"""trajectory.json and the behaviour measures through the real workflow and the real pi: every
run of the demo has a trajectory that ATIF's models and a reader (atif-scan) take, and a
behaviour measure named in the contract is a metric with its gap and verdict like any other."""

from __future__ import annotations

import csv
import json
import re

import pytest

from tests.e2e.harness_world import check_trajectory
from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_every_demo_run_has_a_trajectory_and_its_behaviour_gaps(tmp_path, pi_installation):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=2)
    scenario = project / "demo" / "scenario.toml"
    text = scenario.read_text()
    scenario.write_text(
        re.sub(r"(?m)^metrics = \[", 'metrics = ["tests_ran", "calls_read", ', text)
    )
    result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = project / "results" / "demo"
    runs = sorted((results / "runs").glob("*/r*/measures.json"))
    assert len(runs) == 8
    for measures_file in runs:
        check_trajectory(measures_file.parent, "pi")
        measures = json.loads(measures_file.read_text())
        assert measures["metrics"]["tests_ran"] == measures["builtin"]["tests_ran"]
        assert measures["builtin"]["tests_ran"] == measures["metrics"]["ran_tests"]
    with open(results / "gaps.csv", newline="") as table:
        gaps = [row for row in csv.DictReader(table) if row["metric"] == "tests_ran"]
    assert len(gaps) == 3 and all(row["verdict"] for row in gaps), gaps
    with open(results / "cells.csv", newline="") as table:
        assert any(row["metric"] == "calls_read" for row in csv.DictReader(table))
