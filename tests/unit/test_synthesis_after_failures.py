"""One run's failure never stops the synthesis of the others: after an invocation that ended on
failed jobs, a results folder some runs of which were measured gets its synthesis and report
from them (the workflow's `onerror:`), unless the workflow was stopped."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from agentab.layout import ResultsFolder
from agentab.report.hooks import synthesize_what_ran
from agentab.synthesis.waves import read_looks
from agentab.workflow import stopping
from tests.unit.test_synthesis import write_run, write_scenario


def plan_of(root: Path) -> SimpleNamespace:
    layout = SimpleNamespace(results=lambda name: ResultsFolder(root / name))
    return SimpleNamespace(scenarios={"tests-rule": None}, layout=layout)


def partial_folder(root: Path) -> Path:
    folder = write_scenario(root / "tests-rule", repetitions=3)
    for rep in (1, 2):  # r03 of each cell faulted on every attempt: no measures.json
        write_run(folder, "nothing", rep, {"ran_tests": False, "turns": 3})
        write_run(folder, "rule", rep, {"ran_tests": True, "turns": 4})
    return folder


def test_the_runs_measured_get_a_synthesis_and_a_report(tmp_path, monkeypatch):
    monkeypatch.setattr(stopping, "RECEIVED", [])  # whatever other tests' handlers recorded
    folder = partial_folder(tmp_path)
    (line,) = synthesize_what_ran(plan_of(tmp_path))
    assert "written from the 4 runs measured so far (2 missing, listed in it)" in line
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "runs/nothing/r03" in text and "runs/rule/r03" in text
    assert (folder / "report" / "index.html").exists()
    assert read_looks(folder) == []  # not a look: nobody chose to read it early
    assert synthesize_what_ran(plan_of(tmp_path)) == []  # up to date: nothing to do


def test_a_stopped_workflow_writes_no_synthesis(tmp_path, monkeypatch):
    folder = partial_folder(tmp_path)
    monkeypatch.setattr(stopping, "RECEIVED", [15])
    assert synthesize_what_ran(plan_of(tmp_path)) == []
    assert not (folder / "synthesis.md").exists()
