"""`agentab runs` and `agentab redo` on a small synthetic results folder."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentab.cli import main
from agentab.errors import AgentabError
from agentab.harnesses.base import HarnessFault
from agentab.layout import Layout
from agentab.report import build_report
from agentab.report.redo import normalise_run_id, redo_runs
from agentab.run.record import record_fault
from agentab.synthesis.synthesize import synthesize
from agentab.workflow.invocation import record_invocation
from tests.unit.report_folder import write_results

SYNTHESIS = ("synthesis.md", "cells.csv", "gaps.csv", "measures.csv", "gaps.svg")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = write_results(tmp_path / "results" / "tests-rule")
    synthesize(folder)
    build_report(folder)
    return folder


def test_runs_lists_every_run_with_status_and_reason(results: Path, capsys) -> None:
    assert main(["runs", str(results)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split() == [
        "RUN",
        "STATUS",
        "CELL",
        "TURNS",
        "TOOL",
        "CALLS",
        "PROTECTED",
        "BRICKS",
        "USED",
        "REASON",
    ]
    assert len(lines) == 21
    assert any(line.split()[:2] == ["rule/r10", "fault"] for line in lines)
    assert any(line.split()[:2] == ["nothing/r10", "missing"] for line in lines)
    assert "20 runs: 17 valid, 1 invalid, 1 fault, 1 missing" in err


def test_the_reason_of_a_fault_is_its_sentence_never_the_json_it_was_kept_as(
    results: Path, capsys
) -> None:
    faults = results / "runs" / "rule" / "r10" / "faults.jsonl"
    faults.unlink()
    said = "the etalon's setup failed (exit status 1): ERROR: No matching distribution found"
    record_fault(faults, HarnessFault(said))  # as the run step keeps a fault
    with faults.open("a") as log:
        log.write('{"at": "2025-10-15T10:00:00+00:00", "attempt": 2}\n')  # no reason at all
    assert main(["runs", str(results), "--status", "fault"]) == 0
    (header, row) = capsys.readouterr().out.splitlines()
    assert row.split()[:2] == ["rule/r10", "fault"]
    assert row[header.index("REASON") :] == "a fault with no reason recorded (attempt 2)"
    faults.write_text(faults.read_text().splitlines()[0] + "\n")
    assert main(["runs", str(results), "--status", "fault"]) == 0
    (header, row) = capsys.readouterr().out.splitlines()
    assert row[header.index("REASON") :] == said


def test_runs_filters_by_status_and_speaks_json(results: Path, capsys) -> None:
    assert main(["runs", str(results), "--status", "invalid", "--status", "fault", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(row["run"], row["status"]) for row in rows] == [
        ("rule/r02", "invalid"),
        ("rule/r10", "fault"),
    ]
    assert "SyntaxError" in rows[0]["reason"] and rows[1]["faults"] == 1


def test_redo_removes_the_runs_files_but_their_fault_history(results: Path) -> None:
    (results / "runs" / "rule" / "r03" / "faults.jsonl").write_text('{"reason": "529"}\n')
    result = redo_runs(results, ["rule/r03"])
    assert [entry.run for entry in result.runs] == ["rule/r03"]
    kept = sorted(p.name for p in (results / "runs" / "rule" / "r03").iterdir())
    assert kept == ["faults.jsonl", "redone.jsonl"]  # the attempts, and the measured one redone
    for name in SYNTHESIS:
        assert not (results / name).exists(), name
    assert not (results / "report").exists()
    # every other run is untouched
    assert (results / "runs" / "rule" / "r04" / "measures.json").exists()
    assert (results / "runs" / "nothing" / "r03" / "transcript.jsonl").exists()
    assert (results / "scenario.toml").exists()


def test_redo_by_status_takes_every_run_of_it(results: Path) -> None:
    result = redo_runs(results, statuses=["invalid", "fault"])
    assert [entry.run for entry in result.runs] == ["rule/r02", "rule/r10"]
    assert not (results / "runs" / "rule" / "r02" / "measures.json").exists()
    assert (results / "runs" / "rule" / "r10" / "faults.jsonl").exists()


def test_redo_removes_checked_answers_only_of_a_filled_form(results: Path) -> None:
    keys = results / ".form-keys"
    keys.mkdir()
    (keys / "review.json").write_text("{}")  # the id -> run mapping: never removed
    (keys / "review.answers.json").write_text("{}")
    redo_runs(results, ["nothing/r01"])
    assert (keys / "review.answers.json").exists()  # no filled form: nothing depends on it
    (results / "forms").mkdir()
    (results / "forms" / "review.toml").write_text("")
    redo_runs(results, ["nothing/r02"])
    assert not (keys / "review.answers.json").exists()
    assert (keys / "review.json").exists()


def test_nothing_chosen_removes_nothing(results: Path) -> None:
    result = redo_runs(results, statuses=["failed"])
    assert result.runs == [] and result.removed == []
    assert (results / "synthesis.md").exists()


def test_an_unknown_run_or_status_is_a_clear_error(results: Path, capsys) -> None:
    with pytest.raises(AgentabError, match="no such run: rule/r99"):
        redo_runs(results, ["rule/r99"])
    with pytest.raises(AgentabError, match="cannot redo runs by status 'valid'"):
        redo_runs(results, statuses=["valid"])
    assert (results / "synthesis.md").exists()
    assert main(["redo", str(results)]) == 2
    assert "no run chosen" in capsys.readouterr().err


def holding_workflow(results: Path) -> subprocess.Popen:
    """Another process holding the folder as a running workflow does, until it is killed."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(results)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "holding"
    return holder


HOLD = """
import sys, time
from agentab.layout import ResultsFolder
from agentab.workflow.holding import hold_results_folder
hold_results_folder(ResultsFolder(__import__("pathlib").Path(sys.argv[1])))
print("holding", flush=True)
time.sleep(600)
"""


def test_redo_refuses_while_a_workflow_holds_the_folder(results: Path, capsys) -> None:
    holder = holding_workflow(results)
    try:
        assert main(["redo", str(results), "rule/r02"]) == 2
        err = capsys.readouterr().err
        assert f"a workflow is running on this folder (snakemake, pid {holder.pid})" in err, err
        assert "fix: wait for it to end" in err
        assert (results / "runs" / "rule" / "r02" / "measures.json").exists()
    finally:
        holder.kill()  # as a kill -9 would: the kernel releases the lock, nothing is stale
        holder.wait()
    assert main(["redo", str(results), "rule/r02"]) == 0
    assert not (results / "runs" / "rule" / "r02" / "measures.json").exists()


def test_the_redo_command_says_what_it_removed(results: Path, capsys) -> None:
    assert main(["redo", str(results), "runs/rule/r02/"]) == 0
    out = capsys.readouterr().out
    assert "redo rule/r02 (invalid: validator tests: exit status 1" in out
    assert "synthesis.md" in out and "report" in out
    assert "1 run to redo; this redoes it and nothing else:" in out


def test_redo_prints_the_snakemake_command_of_its_own_scenario(
    results: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    project = tmp_path / "project"
    (project / "config").mkdir(parents=True)
    (project / "scenarios" / "rule").mkdir(parents=True)
    frozen = (results / "scenario.toml").read_bytes()
    (project / "scenarios" / "rule" / "scenario.toml").write_bytes(frozen)
    monkeypatch.chdir(project)
    config = "scenarios:\n  - scenarios/demo/scenario.toml\nresults: results\n"
    (project / "config" / "config.yaml").write_text(config)
    assert main(["redo", str(results), "rule/r03"]) == 0
    command = capsys.readouterr().out.splitlines()[-1].strip()
    assert command == (
        "snakemake --cores all --config 'scenarios=[\"scenarios/rule/scenario.toml\"]' "
        f"'results={results.parent}'"
    )
    # The config already runs this scenario into this folder: nothing to add.
    config = f"scenarios:\n  - scenarios/rule/scenario.toml\nresults: {results.parent}\n"
    (project / "config" / "config.yaml").write_text(config)
    assert main(["redo", str(results), "rule/r04"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].strip() == "snakemake --cores all"


def test_redo_prints_the_command_that_last_ran_the_folder_from_its_folder(
    results: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    # The README's way to run a scenario kept outside the project, with a profile.
    project, elsewhere = tmp_path / "my project", tmp_path / "mi-local" / "scenario.toml"
    argv = [
        "/opt/venv/bin/snakemake", "--cores", "2", "--profile", "profiles/quiet",
        "--config", f'scenarios=["{elsewhere}"]', f"results={results.parent}",
    ]  # fmt: skip
    workflow = SimpleNamespace(
        scenarios={"tests-rule": None},
        layout=Layout(results.parent, tmp_path / ".agentab", tmp_path / "h"),
        scenario_file=lambda name: str(elsewhere),
    )
    project.mkdir()
    monkeypatch.chdir(project)
    record_invocation(workflow, argv)
    monkeypatch.chdir(tmp_path)
    assert main(["redo", str(results), "rule/r03"]) == 0
    command = capsys.readouterr().out.splitlines()[-1].strip()
    assert command == (
        f"cd '{project}' && /opt/venv/bin/snakemake --cores 2 --profile profiles/quiet "
        f"--config 'scenarios=[\"{elsewhere}\"]' results={results.parent}"
    )
    assert shlex.split(command)[3:] == argv  # a shell gives the command back word for word
    monkeypatch.chdir(project)  # from its own folder, no cd
    assert main(["redo", str(results), "rule/r04"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].strip() == command.split(" && ", 1)[1]


@pytest.mark.parametrize(
    "given",
    ["rule-off/r03", "rule-off/r03/", "runs/rule-off/r03", "results/demo/runs/rule-off/r03/"],
)
def test_a_run_may_be_named_by_its_folder(given: str) -> None:
    assert normalise_run_id(given) == "rule-off/r03"


def test_runs_lists_the_runs_that_failed_a_metric(results: Path, capsys) -> None:
    # nothing: ran_tests is true in r01 only; r10 is missing.
    assert main(["runs", str(results), "--metric", "ran_tests=false"]) == 0
    out, err = capsys.readouterr()
    assert [line.split()[0] for line in out.splitlines()[1:]] == [
        f"nothing/r{rep:02d}" for rep in range(2, 10)
    ]
    assert "8 of them with ran_tests=false" in err
    assert main(["runs", str(results), "--metric", "ran_tests=true", "--metric", "turns>5"]) == 0
    out = capsys.readouterr().out
    assert {line.split()[0] for line in out.splitlines()[1:]} == {
        f"rule/r{rep:02d}" for rep in (1, 3, 4, 5, 6, 7, 8, 9)
    }
    assert main(["runs", str(results), "--metric", "turns~5"]) == 2
    assert "fix: write NAME=true, NAME=false, or a number" in capsys.readouterr().err


def test_a_redone_failing_run_stays_visible_in_the_synthesis(results: Path) -> None:
    """Redoing only the failing runs can take failures out of a cell: each replaced attempt is
    kept in the run's redone.jsonl, and the synthesis names it even once the new attempt has
    measures of its own."""
    kept = (results / "runs" / "rule" / "r02" / "measures.json").read_bytes()
    redo_runs(results, statuses=["invalid"])
    redone = (results / "runs" / "rule" / "r02" / "redone.jsonl").read_text().splitlines()
    assert [json.loads(line)["status"] for line in redone] == ["invalid"]
    (results / "runs" / "rule" / "r02" / "measures.json").write_bytes(kept)  # the new attempt
    synthesize(results)
    text = (results / "synthesis.md").read_text(encoding="utf-8")
    assert (
        "`rule`: 1 run redone after a measured attempt (`agentab redo`): rule/r02 (invalid:" in text
    )
