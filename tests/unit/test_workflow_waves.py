"""The workflow's side of waves: a decision file read, or replayed when it cannot be; the runs
a sequential results folder is expected to hold; an unreadable decision decided again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from agentab.workflow.targets import Workflow
from agentab.workflow.waves import (
    bad_decisions,
    expected_reps,
    next_wave_cells,
    read_decision,
    repair_decisions,
)
from tests.unit.test_synthesis import write_run

DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo"
SEQUENTIAL = 'repetitions = 30\nstopping = "sequential"\nwave = 5\ndecide = ["ran_tests"]\n'


def sequential_workflow(tmp_path: Path) -> Workflow:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder, symlinks=True)
    path = folder / "scenario.toml"
    path.write_text(path.read_text().replace("repetitions = 10\n", SEQUENTIAL, 1))
    config = {"scenarios": [str(path)], "results": str(tmp_path / "results"), "state": ".agentab"}
    flow = Workflow.from_config(config)
    results = flow.layout.results("demo").path
    results.mkdir(parents=True)
    shutil.copy(path, results / "scenario.toml")
    return flow


def write_wave(flow: Workflow, wave: int, effect: bool) -> None:
    """Wave `wave` of every cell of the demo; the rule cells always run the tests if `effect`."""
    results = flow.layout.results("demo").path
    for cell in flow.scenarios["demo"].cells:
        for rep in range((wave - 1) * 5 + 1, wave * 5 + 1):
            ran = effect and cell.name.startswith("rule") or rep % 5 == 0
            run = write_run_of(results, cell, rep, {"ran_tests": ran})
            assert run.exists()


def write_run_of(results: Path, cell, rep: int, metrics: dict) -> Path:
    from tests.unit import test_synthesis

    test_synthesis.SLUGS[cell.name] = cell.slug
    folder = write_run(results, cell.name, rep, metrics)
    data = json.loads((folder / "measures.json").read_text())
    (folder / "measures.json").write_text(json.dumps({**data, "scenario": "demo"}))
    return folder


def test_a_decision_is_read_and_a_broken_one_replayed(tmp_path: Path) -> None:
    flow = sequential_workflow(tmp_path)
    write_wave(flow, 1, effect=True)
    write_wave(flow, 2, effect=True)
    decision = tmp_path / "wave-2.json"
    decision.write_text(json.dumps({"next": ["nothing · high"]}))
    assert read_decision(decision) == ["nothing · high"]
    decision.write_text("garbage")
    assert read_decision(decision) is None
    # Replayed from the measures: the rule cells decided at wave 2, the others go on.
    assert next_wave_cells(flow, "demo", 3, decision) == ["nothing · off", "nothing · high"]
    # Expected: the rule cells' two waves; the others', every wave up to the maximum (the
    # waves after 2 are due, not made yet: nothing decides them without their runs).
    assert expected_reps(flow, "demo") == {
        "nothing · off": 30,
        "nothing · high": 30,
        "rule · off": 10,
        "rule · high": 10,
    }


def test_an_unreadable_decision_and_those_after_it_are_removed_with_the_synthesis(
    tmp_path: Path,
) -> None:
    flow = sequential_workflow(tmp_path)
    results = flow.layout.results("demo")
    results.path.joinpath("waves").mkdir()
    for wave in (1, 2, 3):
        results.wave_decision(wave).write_text(json.dumps({"next": []}))
    results.wave_decision(2).write_text("{")
    results.output("synthesis.md").write_text("old")
    assert bad_decisions(results, 6) == [results.wave_decision(2), results.wave_decision(3)]
    lines = repair_decisions(flow, dry=True)
    assert "would be decided again" in lines[0] and results.wave_decision(2).exists()
    lines = repair_decisions(flow, dry=False)
    assert "the decision after wave 2 is unreadable" in lines[0]
    assert results.wave_decision(1).exists() and not results.wave_decision(2).exists()
    assert not results.wave_decision(3).exists() and not results.output("synthesis.md").exists()
