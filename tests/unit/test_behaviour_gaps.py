"""The behaviour measures judged for every scenario: cells.csv and gaps.csv rows with verdicts, a
family of their own, and synthesis.md's section beside the outcomes."""

from __future__ import annotations

import csv
import json
import shutil

from agentab.synthesis.synthesize import synthesize
from tests.unit.test_synthesis import write_run, write_scenario
from tests.unit.test_synthesis_outputs import DEMO_RESULTS


def builtin(ran: bool, reads: int) -> dict:
    return {
        "turns": 4,
        "tool_errors": 0,
        "tests_ran": ran,
        "calls_read": reads,
        "calls_edit": 1,
        "calls_search": 0,
        "calls_tests": int(ran),
        "calls_shell": 0,
        "calls_other": 0,
        "files_read": 1,
        "files_edited": 1,
        "repeated_calls": 0,
        "turns_before_edit": reads,
        "tokens_per_turn": 1000.0,
    }


def write_behaving(folder, runs=10):
    write_scenario(folder, repetitions=runs, metrics=["ran_tests"])
    for rep in range(1, runs + 1):
        for cell, ran in (("nothing", rep <= 2), ("rule", True)):
            run_dir = write_run(folder, cell, rep, {"ran_tests": ran})
            path = run_dir / "measures.json"
            measures = json.loads(path.read_text())
            measures["builtin"] = builtin(ran, reads=1 if cell == "rule" else 1 + rep % 2)
            path.write_text(json.dumps(measures))
    return folder


def rows(path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_behaviour_measures_get_values_and_verdicts_without_being_declared(tmp_path):
    folder = write_behaving(tmp_path / "results")
    result = synthesize(folder)
    cells = {(row["cell"], row["metric"]): row for row in rows(folder / "cells.csv")}
    assert cells["rule", "calls_tests"]["value"] == "1.0"
    assert cells["nothing", "tests_ran"]["k"] == "2"
    gaps = {row["metric"]: row for row in rows(folder / "gaps.csv") if row["cell"] == "rule"}
    assert gaps["tests_ran"]["verdict"] == "established"
    assert gaps["calls_read"]["verdict"] == "inconclusive"
    # A family of their own: the outcomes' Holm and the answer are untouched by them.
    assert [gap.metric for gap in result.family] == ["ran_tests"]
    assert all(gap.metric != "tests_ran" for gap in result.established)


def test_synthesis_md_puts_behaviour_gaps_beside_the_outcomes(tmp_path):
    folder = write_behaving(tmp_path / "results")
    synthesize(folder)
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    section = text.split("## Behaviour: why the cells differ", 1)[1].split("\n## ", 1)[0]
    outcomes, behaviour = section.split("Behaviour:", 1)
    assert "the rate of `ran_tests` is higher" in outcomes
    assert "the rate of `tests_ran` is higher in" not in outcomes
    assert "In `rule`, the rate of `tests_ran` is higher than in `nothing`" in behaviour
    assert "| rule | 1 (33%) | 1 (33%) | 0 (0%) | 1 (33%) | 0 (0%) | 0 (0%) | 10/10 |" in behaviour
    # `nothing` reads once or twice (1.5 a run), ran the tests in 2 runs of 10.
    assert (
        "| nothing | 1.5 (56%) | 1 (37%) | 0 (0%) | 0.2 (7%) | 0 (0%) | 0 (0%) | 10/10 |"
        in behaviour
    )
    # A run of each side of the established outcome gap, to read side by side.
    assert (
        "[rule/r01](runs/rule/r01/) (rule, true) against [nothing/r03](runs/nothing/r03/)"
        in section
    )


def test_where_the_calls_went_counts_every_run_not_the_median_one(tmp_path):
    # A real model answers most runs in prose: 7 runs of no call, 3 of 20 edits each. The median
    # run made no call; the cell's runs made 6 edits each on average.
    folder = write_behaving(tmp_path / "results")
    for rep in range(1, 11):
        path = folder / "runs" / "nothing" / f"r{rep:02d}" / "measures.json"
        measures = json.loads(path.read_text())
        acted = rep <= 3
        counts = {kind: 0 for kind in ("read", "search", "tests", "shell", "other")}
        measures["builtin"] |= {f"calls_{kind}": n for kind, n in counts.items()}
        measures["builtin"]["calls_edit"] = 20 if acted else 0
        path.write_text(json.dumps(measures))
    synthesize(folder)
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "| nothing | 0 (0%) | 6 (100%) | 0 (0%) | 0 (0%) | 0 (0%) | 0 (0%) | 3/10 |" in text


def test_a_metric_the_scenario_scores_is_not_repeated_as_behaviour(tmp_path):
    folder = write_behaving(tmp_path / "results")
    scenario = folder / "scenario.toml"
    scenario.write_text(
        scenario.read_text().replace(
            'metrics = ["ran_tests"]', 'metrics = ["ran_tests", "tests_ran"]'
        )
    )
    for path in folder.glob("runs/*/r*/measures.json"):
        measures = json.loads(path.read_text())
        measures["metrics"]["tests_ran"] = measures["builtin"]["tests_ran"]
        path.write_text(json.dumps(measures))
    result = synthesize(folder)
    assert "tests_ran" in [gap.metric for gap in result.family]
    assert "tests_ran" not in [gap.metric for gap in result.behaviour]


def test_runs_without_a_transcript_have_no_behaviour_section(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=3)
    for rep in range(1, 4):
        for cell in ("nothing", "rule"):
            write_run(folder, cell, rep, {"ran_tests": True, "turns": 3})
    synthesize(folder)
    assert "## Behaviour" not in (folder / "synthesis.md").read_text(encoding="utf-8")


def test_the_report_shows_the_behaviour_beside_the_outcomes(tmp_path):
    from agentab.report import build_report

    folder = write_behaving(tmp_path / "results")
    synthesize(folder)
    html = build_report(folder).index.read_text(encoding="utf-8")
    section = html.split('id="behaviour"', 1)[1].split("<h2", 1)[0]
    assert "<code>tests_ran</code> is higher" in section
    assert 'class="call-tests" style="width: 33.3%"' in section
    assert '<a href="runs/nothing/r03.html">nothing/r03</a>' in section


def test_the_demo_shows_the_rule_running_the_tests_beside_its_outcome(tmp_path):
    # The demo's own runs (their measures.json, recorded from `snakemake --cores 8`).
    folder = tmp_path / "demo"
    shutil.copytree(DEMO_RESULTS, folder)
    synthesize(folder)
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    section = text.split("## Behaviour: why the cells differ", 1)[1].split("\n## ", 1)[0]
    outcomes, behaviour = section.split("Behaviour:", 1)
    for cell in ("rule · off", "rule · high"):
        said = f"In `{cell}`, the rate of `{{}}` is higher than in `nothing · off`: 10/10 runs"
        assert said.format("ran_tests") in outcomes
        assert said.format("tests_ran") in behaviour
    gaps = {(row["cell"], row["metric"]): row for row in rows(folder / "gaps.csv")}
    assert gaps["rule · off", "tests_ran"]["verdict"] == "established"
