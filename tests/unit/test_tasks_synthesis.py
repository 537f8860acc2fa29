"""Tasks as strata and the A/A calibration, in the synthesis: the stratified estimator against an
independent computation, the A/A copy outside the Holm family, the task columns."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from agentab.synthesis import stats
from agentab.synthesis.strata import stratum_key
from agentab.synthesis.synthesize import synthesize

SCENARIO = """\
[scenario]
name = "strata"

{tasks}

[etalon]
repo = "calc.bundle"
tag = "v1.0"

[agent]
harness = "pi"
version = "1.6.0"
provider = "offline"
model = "demo"
thinking = "off"
timeout = "2m"

[protocol]
repetitions = {repetitions}
aa = {aa}

[protocol.limits]
memory = "2G"
processes = 256
disk = "1G"
patch = "1M"

[axes]
context = ["nothing", "rule"]

[deltas.context.rule]
context_files = ["bricks/run-tests.md"]

[validation]
metrics = ["ran_tests", "turns"]

[validators.tests]
mode = "script"
run = ["validators/tests.py"]
"""
TWO_TASKS = '[tasks.easy]\nprompt = "Fix mean."\n\n[tasks.hard]\nprompt = "Add median."'
ONE_TASK = '[task]\nprompt = "Fix mean."'


def write_folder(folder: Path, *, tasks=TWO_TASKS, repetitions=5, aa=False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = SCENARIO.format(tasks=tasks, repetitions=repetitions, aa=str(aa).lower())
    (folder / "scenario.toml").write_text(text, encoding="utf-8")
    return folder


def write_run(folder: Path, cell: str, task: str, rep: int, metrics: dict) -> None:
    slug = cell.lower().replace(" (a/a)", "-a-a")
    run = f"{slug}--{task}" if task else slug
    run_dir = folder / "runs" / run / f"r{rep:02d}"
    run_dir.mkdir(parents=True, exist_ok=True)
    measures = {
        "schema": 1,
        "scenario": "strata",
        "cell": cell,
        "rep": rep,
        "run": f"{run}/r{rep:02d}",
        "status": "valid",
        "metrics": metrics,
        "provenance": {"provider": "offline"},
    } | ({"task": task} if task else {})
    (run_dir / "measures.json").write_text(json.dumps(measures), encoding="utf-8")


def read_csv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


# Small data, by hand: the rule cell runs the tests 5/5 on the easy task and 1/5 on the hard
# one; the reference 3/5 and 0/5. Turns: medians 4 and 10 against 6 and 12.
RAN = {
    ("nothing", "easy"): [True, True, True, False, False],
    ("nothing", "hard"): [False] * 5,
    ("rule", "easy"): [True] * 5,
    ("rule", "hard"): [True, False, False, False, False],
}
TURNS = {
    ("nothing", "easy"): [5, 6, 6, 7, 9],
    ("nothing", "hard"): [11, 12, 12, 13, 20],
    ("rule", "easy"): [3, 4, 4, 5, 8],
    ("rule", "hard"): [9, 10, 10, 11, 30],
}


def fill_two_tasks(folder: Path, cells=("nothing", "rule")) -> None:
    for cell in cells:
        source = cell.removesuffix(" (A/A)")
        for task in ("easy", "hard"):
            for rep in range(1, 6):
                ran = RAN[source, task][rep - 1]
                turns = TURNS[source, task][rep - 1]
                write_run(folder, cell, task, rep, {"ran_tests": ran, "turns": turns})


def by_key(rows: list[dict], *fields: str) -> dict:
    return {tuple(row[field] for field in fields): row for row in rows}


def test_pooled_value_is_the_equal_weight_mean_of_the_tasks(tmp_path):
    folder = write_folder(tmp_path / "results")
    fill_two_tasks(folder)
    synthesize(folder)
    cells = by_key(read_csv(folder / "cells.csv"), "cell", "task", "metric")
    # Rates: (3/5 + 0/5) / 2 and (5/5 + 1/5) / 2; k and n count every run.
    assert float(cells["nothing", "all", "ran_tests"]["value"]) == pytest.approx(0.3)
    assert float(cells["rule", "all", "ran_tests"]["value"]) == pytest.approx(0.6)
    assert cells["rule", "all", "ran_tests"]["k"] == "6"
    assert cells["rule", "all", "ran_tests"]["n"] == "10"
    # Medians: (6 + 12) / 2 and (4 + 10) / 2, not the median of the ten pooled values.
    assert float(cells["nothing", "all", "turns"]["value"]) == pytest.approx(9.0)
    assert float(cells["rule", "all", "turns"]["value"]) == pytest.approx(7.0)
    # The per-task rows, descriptive, with their own dispersion.
    assert float(cells["rule", "hard", "ran_tests"]["value"]) == pytest.approx(0.2)
    assert cells["rule", "hard", "ran_tests"]["dispersion"] == "wilson95"
    assert cells["nothing", "easy", "turns"]["value"] == "6.0"
    gaps = by_key(read_csv(folder / "gaps.csv"), "cell", "task", "metric")
    assert float(gaps["rule", "all", "ran_tests"]["gap"]) == pytest.approx(0.3)
    assert float(gaps["rule", "all", "turns"]["gap"]) == pytest.approx(-2.0)
    assert float(gaps["rule", "hard", "turns"]["gap"]) == pytest.approx(-2.0)


def test_the_stratified_bootstrap_matches_an_independent_computation(tmp_path):
    """Each (cell, task) group resampled on its own with its own stream, by index, in numpy:
    the pooled draws are the mean of the tasks' draws, and the interval is their percentiles."""
    folder = write_folder(tmp_path / "results")
    fill_two_tasks(folder)
    synthesize(folder)
    gaps = by_key(read_csv(folder / "gaps.csv"), "cell", "task", "metric")

    def rate_draws(cell: str, task: str) -> np.ndarray:
        values = np.array(RAN[cell, task], dtype=float)
        rng = stats.generator_for(stratum_key("ran_tests", cell, task))
        # The same stream, the same law: a binomial count of the group's successes, at its rate
        # with half a success and half a failure added (several tasks: strata.SMOOTHING).
        rate = (values.sum() + 0.5) / (values.size + 1)
        return rng.binomial(values.size, rate, size=stats.DRAWS) / values.size

    pooled = {
        cell: (rate_draws(cell, "easy") + rate_draws(cell, "hard")) / 2
        for cell in ("nothing", "rule")
    }
    draws = pooled["rule"] - pooled["nothing"]
    low, high = np.percentile(draws, [2.5, 97.5])
    row = gaps["rule", "all", "ran_tests"]
    assert float(row["ci_low"]) == pytest.approx(low)
    assert float(row["ci_high"]) == pytest.approx(high)
    far = np.count_nonzero(draws <= 0)
    assert float(row["p"]) == pytest.approx(min(1.0, 2 * far / stats.DRAWS))


def test_stratified_resampling_by_index_agrees_in_distribution():
    """Resampling each stratum by index (the textbook stratified bootstrap) and the estimator's
    shortcut give the same interval, up to the bootstrap's own noise."""
    from agentab.synthesis.strata import pooled_draws, resample_group

    rng = np.random.default_rng(7)
    by_index = []
    for _ in range(stats.DRAWS):
        per_task = []
        for task in ("easy", "hard"):
            values = np.array(TURNS["rule", task], dtype=float)
            per_task.append(np.median(rng.choice(values, size=values.size, replace=True)))
        by_index.append(np.mean(per_task))
    mine = pooled_draws(
        [
            resample_group("median", TURNS["rule", task], "turns", "rule", task)
            for task in ("easy", "hard")
        ]
    )
    assert np.percentile(mine, [2.5, 50, 97.5]) == pytest.approx(
        np.percentile(by_index, [2.5, 50, 97.5]), abs=0.51
    )
    assert mine.mean() == pytest.approx(np.mean(by_index), abs=0.1)


def test_minimum_runs_apply_to_the_cell_total_over_tasks(tmp_path):
    """5 runs per task, 10 per cell: at least 9, so a gap may be established."""
    folder = write_folder(tmp_path / "results")
    fill_two_tasks(folder)
    result = synthesize(folder)
    gap = next(g for g in result.family if g.metric == "turns")
    assert (gap.n_cell, gap.n_ref) == (10, 10)
    assert not gap.short_of_runs


def test_a_pooled_gap_needs_every_task_in_both_cells(tmp_path):
    folder = write_folder(tmp_path / "results")
    fill_two_tasks(folder)
    for rep in range(1, 6):
        (folder / "runs" / "rule--hard" / f"r{rep:02d}" / "measures.json").unlink()
    result = synthesize(folder)
    assert not result.family  # no pooled gap: `rule` has no run of the hard task
    assert {(gap.task, gap.metric) for gap in result.task_gaps} == {
        ("easy", "ran_tests"),
        ("easy", "turns"),
    }
    cells = by_key(read_csv(folder / "cells.csv"), "cell", "task", "metric")
    assert cells["rule", "all", "ran_tests"]["value"] == ""
    assert "needs every task" in cells["rule", "all", "ran_tests"]["note"]


def test_per_task_gaps_carry_no_verdict_and_stay_out_of_holm(tmp_path):
    folder = write_folder(tmp_path / "results")
    fill_two_tasks(folder)
    synthesize(folder)
    rows = read_csv(folder / "gaps.csv")
    for row in rows:
        if row["task"] == "all":
            assert row["verdict"] in ("established", "inconclusive")
            assert row["p_holm"] != ""
        else:
            assert (row["verdict"], row["p"], row["p_holm"]) == ("", "", "")
            assert row["ci_low"] and row["ci_high"]
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "## Values per task" in text
    assert "### Gaps per task (descriptive)" in text


def test_aa_gaps_are_outside_the_holm_family(tmp_path):
    folder = write_folder(tmp_path / "results", tasks=ONE_TASK, repetitions=10, aa=True)
    for cell, values in (
        ("nothing", [True] * 2 + [False] * 8),
        ("rule", [True] * 6 + [False] * 4),
        ("nothing (A/A)", [True] * 9 + [False] * 1),  # an A/A gap that looks established
    ):
        for rep, value in enumerate(values, start=1):
            write_run(folder, cell, "", rep, {"ran_tests": value, "turns": 5 + rep % 3})
    result = synthesize(folder)
    family = result.family
    assert {gap.cell for gap in family} == {"rule"}
    # Holm over the family alone: two gaps (ran_tests, turns) of the rule cell.
    assert [gap.p_holm for gap in family] == stats.holm([gap.verdict.p for gap in family])
    assert {gap.cell for gap in result.calibration} == {"nothing (A/A)"}
    assert all(gap.p_holm is None for gap in result.calibration)
    rows = read_csv(folder / "gaps.csv")
    aa_rows = [row for row in rows if row["cell"] == "nothing (A/A)"]
    assert aa_rows and all(row["p_holm"] == "" and row["p"] for row in aa_rows)
    assert [row["cell"] for row in rows] == ["rule", "rule", "nothing (A/A)", "nothing (A/A)"]
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "## Calibration (A/A)" in text
    warnings = text.split("## Warnings", 1)[1].split("## Matrix", 1)[0]
    assert "A/A calibration: `nothing (A/A)` differs from `nothing` on `ran_tests`" in warnings
    assert "established" in next(r for r in aa_rows if r["metric"] == "ran_tests")["verdict"]
    # The Reading states the family's established gaps only.
    reading = text.split("## Reading", 1)[1]
    assert "(A/A)" not in reading


def test_one_task_scenarios_have_only_pooled_rows(tmp_path):
    folder = write_folder(tmp_path / "results", tasks=ONE_TASK, repetitions=3)
    for cell in ("nothing", "rule"):
        for rep in range(1, 4):
            write_run(folder, cell, "", rep, {"ran_tests": rep > 1, "turns": rep})
    synthesize(folder)
    assert {row["task"] for row in read_csv(folder / "cells.csv")} == {"all"}
    assert {row["task"] for row in read_csv(folder / "gaps.csv")} == {"all"}
    first = (folder / "gaps.csv").read_bytes()
    synthesize(folder)
    assert (folder / "gaps.csv").read_bytes() == first


def test_a_one_task_gap_keeps_the_draws_it_had_before_tasks(tmp_path):
    """The stream of a group without a task is the one `stats.group_key` always gave."""
    folder = write_folder(tmp_path / "results", tasks=ONE_TASK, repetitions=4)
    values = {"nothing": [False, False, True, False], "rule": [True, True, True, False]}
    for cell, found in values.items():
        for rep, value in enumerate(found, start=1):
            write_run(folder, cell, "", rep, {"ran_tests": value, "turns": rep})
    result = synthesize(folder)
    gap = next(g for g in result.family if g.metric == "ran_tests")
    alone = stats.bootstrap_gap(
        "rate",
        values["rule"],
        values["nothing"],
        cell_key=stats.group_key("ran_tests", "rule"),
        reference_key=stats.group_key("ran_tests", "nothing"),
    )
    assert (gap.verdict.ci_low, gap.verdict.ci_high, gap.verdict.p) == (
        alone.ci_low,
        alone.ci_high,
        alone.p,
    )


def test_two_task_rebuilds_are_byte_identical(tmp_path):
    folder = write_folder(tmp_path / "results", aa=True)
    fill_two_tasks(folder, cells=("nothing", "rule", "nothing (A/A)"))
    synthesize(folder)
    first = {name: (folder / name).read_bytes() for name in ("cells.csv", "gaps.csv", "gaps.svg")}
    synthesize(folder)
    assert first == {name: (folder / name).read_bytes() for name in first}


def test_a_pooled_gap_needs_a_few_runs_in_every_task():
    """Enough runs in all, too few in one task: never established, and it says why."""
    from agentab.synthesis import stats
    from agentab.synthesis.verdicts import Gap, too_few_runs

    verdict = stats.GapVerdict(gap=0.4, ci_low=0.1, ci_high=0.7, p=0.01, verdict=stats.ESTABLISHED)
    gap = Gap(
        cell="rule", reference="nothing", metric="ran_tests", kind="rate", n_cell=10, n_ref=10,
        value_cell=0.7, value_ref=0.3, verdict=verdict, p_holm=0.01, fewest_in_a_task=2,
    )  # fmt: skip
    judged = too_few_runs(gap)
    assert not judged.verdict.is_established
    assert judged.verdict_text == "inconclusive: fewer than 3 valid runs of a cell in a task"
    assert "at least 3 valid runs of each cell in each task (the fewest here: 2)" in judged.note
    enough = too_few_runs(dataclasses.replace(gap, fewest_in_a_task=3))
    assert enough.verdict.is_established and enough.verdict_text == "established"
