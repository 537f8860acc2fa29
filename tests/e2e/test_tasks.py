"""Two tasks and an A/A copy of the reference, end to end: the demo etalon, the real pi binary,
the offline model, one repetition per cell and task."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SECOND_TASK = (
    "Add a function `double(x)` to calc.py that returns twice x; keep the tests passing.\n"
)


def two_task_project(root: Path, harnesses: Path) -> Path:
    project = make_project(root, harnesses, repetitions=1)
    scenario = project / "demo" / "scenario.toml"
    (project / "demo" / "double.md").write_text(SECOND_TASK, encoding="utf-8")
    text = scenario.read_text(encoding="utf-8")
    text = text.replace(
        '[task]\nprompt_file = "task.md"',
        '[tasks.mean]\nprompt_file = "task.md"\n\n[tasks.double]\nprompt_file = "double.md"',
    )
    text = text.replace("repetitions = 1", "repetitions = 1\naa = true")
    # One axis: two cells and the A/A copy, so that six runs do.
    text = re.sub(r'(?m)^thinking = \["off", "high"\]\n', "", text)
    text = text.replace('[deltas.thinking.high]\nthinking = "high"\n', "")
    scenario.write_text(text, encoding="utf-8")
    return project


def read_csv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_two_tasks_with_aa(tmp_path, pi_installation) -> None:
    project = two_task_project(tmp_path / "project", pi_installation.root.parents[1])
    check = snakemake(project, "-n")
    assert check.returncode == 0, check.stderr[-3000:]
    result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = project / "results" / "demo"
    folders = sorted(path.parent.name for path in (results / "runs").glob("*/r01"))
    assert folders == [
        "nothing--double",
        "nothing--mean",
        "nothing-a-a--double",
        "nothing-a-a--mean",
        "rule--double",
        "rule--mean",
    ]
    for folder in folders:
        measures = json.loads((results / "runs" / folder / "r01" / "measures.json").read_text())
        assert measures["task"] == folder.rpartition("--")[2]
        assert measures["run"] == f"{folder}/r01"
    # The second task's prompt is what reached the model in its runs.
    requests = (results / "runs" / "rule--double" / "r01" / "model-requests.jsonl").read_text()
    assert "double(x)" in requests
    assert (
        "double(x)"
        not in (results / "runs" / "rule--mean" / "r01" / "model-requests.jsonl").read_text()
    )
    # The A/A copy: the reference's treatment, its own seeds.
    seeds = {
        folder: json.loads((results / "runs" / folder / "r01" / "run.json").read_text())[
            "offline_model"
        ]["seed"]
        for folder in ("nothing--mean", "nothing-a-a--mean")
    }
    assert seeds["nothing--mean"] != seeds["nothing-a-a--mean"]

    cells = read_csv(results / "cells.csv")
    assert {row["task"] for row in cells} == {"all", "mean", "double"}
    gaps = read_csv(results / "gaps.csv")
    aa = [row for row in gaps if row["cell"] == "nothing (A/A)" and row["task"] == "all"]
    # The A/A gaps are a Holm family of their own, apart from the cells' gaps.
    assert aa and all(float(row["p_holm"]) >= float(row["p"]) for row in aa)
    rule = [row for row in gaps if row["cell"] == "rule" and row["task"] == "all"]
    assert rule and all(row["p_holm"] for row in rule)
    synthesis = (results / "synthesis.md").read_text(encoding="utf-8")
    assert "## Calibration (A/A)" in synthesis
    assert "## Values per task" in synthesis
    assert "identical to the reference" not in synthesis  # the A/A copy is exempt
    index = (results / "report" / "index.html").read_text(encoding="utf-8")
    assert "Values per cell and task" in index
    page = (results / "report" / "runs" / "rule--double" / "r01.html").read_text(encoding="utf-8")
    assert "task double" in page
