"""Tasks as strata and the A/A calibration, in the synthesis: the stratified estimator against an
independent computation, the A/A copy outside the Holm family, the task columns."""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from agentab import stats
from agentab.stats import resampling
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
    # Medians of positive values: the geometric mean of the tasks' medians, sqrt(6 * 12) and
    # sqrt(4 * 10), not the median of the ten pooled values.
    assert float(cells["nothing", "all", "turns"]["value"]) == pytest.approx(72**0.5)
    assert float(cells["rule", "all", "turns"]["value"]) == pytest.approx(40**0.5)
    assert "geometric mean of 2 tasks' medians" in cells["rule", "all", "turns"]["note"]
    # The per-task rows, descriptive, with their own dispersion.
    assert float(cells["rule", "hard", "ran_tests"]["value"]) == pytest.approx(0.2)
    assert cells["rule", "hard", "ran_tests"]["dispersion"] == "wilson95"
    assert cells["nothing", "easy", "turns"]["value"] == "6.0"
    gaps = by_key(read_csv(folder / "gaps.csv"), "cell", "task", "metric")
    assert float(gaps["rule", "all", "ran_tests"]["gap"]) == pytest.approx(0.3)
    assert float(gaps["rule", "all", "turns"]["gap"]) == pytest.approx(40**0.5 - 72**0.5)
    assert float(gaps["rule", "hard", "turns"]["gap"]) == pytest.approx(-2.0)


def test_a_median_with_a_zero_is_pooled_as_the_mean_of_the_tasks_medians(tmp_path):
    folder = write_folder(tmp_path / "results")
    fill_two_tasks(folder)
    path = folder / "runs" / "rule--easy" / "r01" / "measures.json"
    measures = json.loads(path.read_text(encoding="utf-8"))
    measures["metrics"]["turns"] = 0  # the rule's easy turns: [0, 4, 4, 5, 8], median 4
    path.write_text(json.dumps(measures), encoding="utf-8")
    synthesize(folder)
    cells = by_key(read_csv(folder / "cells.csv"), "cell", "task", "metric")
    assert float(cells["nothing", "all", "turns"]["value"]) == pytest.approx(9.0)
    assert float(cells["rule", "all", "turns"]["value"]) == pytest.approx(7.0)
    assert "equal-weight mean over 2 tasks" in cells["rule", "all", "turns"]["note"]


def exact_shuffles(cell: list, reference: list) -> list[tuple]:
    """Every way of dealing a task's runs of both cells back to them, each keeping its number
    of runs: (the cell's values, the reference's values), all equally likely."""
    runs = [*cell, *reference]
    shuffles = []
    for chosen in itertools.combinations(range(len(runs)), len(cell)):
        rest = [runs[i] for i in range(len(runs)) if i not in chosen]
        shuffles.append(([runs[i] for i in chosen], rest))
    return shuffles


def weighted_quantile_holds(values: np.ndarray, end: float, share: float) -> bool:
    """`end` is a `share` quantile of the equally likely `values`, up to the 10 000 draws' own
    noise: at most share (+ noise) lies below it, at least share (- noise) at or below it."""
    noise = 4 * (share * (1 - share) / stats.DRAWS) ** 0.5
    below = np.mean(values < end - 1e-12)
    at_or_below = np.mean(values <= end + 1e-12)
    return below <= share + noise and at_or_below >= share - noise


def check_against_exact(row: dict, gap: float, exact_draws: np.ndarray) -> None:
    """The synthesis's interval and p against the exact distribution of `gap - draw` over
    every combination of every task's shuffles."""
    assert float(row["gap"]) == pytest.approx(gap)
    assert weighted_quantile_holds(exact_draws, float(row["ci_low"]), 0.025)
    assert weighted_quantile_holds(exact_draws, float(row["ci_high"]), 0.975)
    # (A deal that ties the observed one is on the far side; rounding must not say otherwise.)
    far = np.mean(exact_draws <= 1e-12) if gap > 0 else np.mean(exact_draws >= -1e-12)
    assert float(row["p"]) == pytest.approx(min(1.0, 2 * far), abs=0.015)


def rate_and_error(cell: list, reference: list) -> tuple[float, float]:
    """A task's rate gap and its variance, each rate with one success and one failure added."""

    def variance(values):
        rate = (sum(values) + 1) / (len(values) + 2)
        return rate * (1 - rate) / len(values)

    gap = sum(cell) / len(cell) - sum(reference) / len(reference)
    return gap, variance(cell) + variance(reference)


def test_the_pooled_rate_gap_matches_every_shuffle_enumerated(tmp_path):
    """An independent computation: every shuffle of both tasks (252 x 252), the studentized
    pooled gap of each, against the synthesis's 10 000 random shuffles."""
    folder = write_folder(tmp_path / "results")
    fill_two_tasks(folder)
    synthesize(folder)
    row = by_key(read_csv(folder / "gaps.csv"), "cell", "task", "metric")[
        "rule", "all", "ran_tests"
    ]
    observed = [rate_and_error(RAN["rule", t], RAN["nothing", t]) for t in ("easy", "hard")]
    gap = np.mean([g for g, _ in observed])
    error = np.sqrt(sum(v for _, v in observed)) / 2
    per_task = []
    for task in ("easy", "hard"):
        pairs = [
            rate_and_error(a, b) for a, b in exact_shuffles(RAN["rule", task], RAN["nothing", task])
        ]
        per_task.append(np.array(pairs))
    easy, hard = per_task
    pooled_gap = (easy[:, 0][:, None] + hard[:, 0][None, :]) / 2
    pooled_error = np.sqrt(easy[:, 1][:, None] + hard[:, 1][None, :]) / 2
    exact_draws = (gap - pooled_gap / pooled_error * error).ravel()
    check_against_exact(row, gap, exact_draws)


def test_the_pooled_median_gap_matches_every_shuffle_enumerated(tmp_path):
    """An independent computation on the log scale: every shuffle of both tasks, the mean of
    the tasks' log ratios of medians; the interval given back in turns at the reference's
    geometric mean."""
    folder = write_folder(tmp_path / "results")
    fill_two_tasks(folder)
    synthesize(folder)
    row = by_key(read_csv(folder / "gaps.csv"), "cell", "task", "metric")["rule", "all", "turns"]

    def log_ratio(cell, reference):
        return np.log(np.median(cell)) - np.log(np.median(reference))

    tasks = ("easy", "hard")
    observed = np.mean([log_ratio(TURNS["rule", t], TURNS["nothing", t]) for t in tasks])
    easy, hard = (
        np.array(
            [log_ratio(a, b) for a, b in exact_shuffles(TURNS["rule", t], TURNS["nothing", t])]
        )
        for t in tasks
    )
    exact_log_draws = (observed - (easy[:, None] + hard[None, :]) / 2).ravel()
    level = np.sqrt(6 * 12)  # the reference's geometric mean of its tasks' medians
    check_against_exact(row, level * np.expm1(observed), level * np.expm1(exact_log_draws))


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
    pass_k = [row for row in rows if " pass^" in row["metric"]]
    assert pass_k, "two tasks give each rate a pass^k gap"
    for row in pass_k:  # a view of the rates: a verdict, but outside the Holm family
        assert row["task"] == "all" and row["verdict"] in ("established", "inconclusive")
        assert row["p"] != "" and row["p_holm"] == ""
    for row in (row for row in rows if row not in pass_k):
        if row["task"] == "all":
            assert row["verdict"] in ("established", "inconclusive")
            assert row["p_holm"] != ""
        else:
            assert (row["verdict"], row["p"], row["p_holm"]) == ("", "", "")
            assert row["ci_low"] and row["ci_high"]
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "## Values per task" in text
    assert "### Gaps per task (descriptive)" in text
    assert "### pass^k" in text


def test_aa_gaps_are_outside_the_cells_holm_family_and_form_their_own(tmp_path):
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
    calibration = result.calibration
    assert {gap.cell for gap in calibration} == {"nothing (A/A)"}
    # Holm over the A/A gaps alone: their own family of two.
    assert [gap.p_holm for gap in calibration] == stats.holm([g.verdict.p for g in calibration])
    rows = read_csv(folder / "gaps.csv")
    aa_rows = [row for row in rows if row["cell"] == "nothing (A/A)"]
    assert [float(row["p_holm"]) for row in aa_rows] == [gap.p_holm for gap in calibration]
    assert [row["cell"] for row in rows] == ["rule", "rule", "nothing (A/A)", "nothing (A/A)"]
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "## Calibration (A/A)" in text
    warnings = text.split("## Warnings", 1)[1].split("## Matrix", 1)[0]
    assert "A/A calibration: `nothing (A/A)` differs from `nothing` on `ran_tests`" in warnings
    assert "established" in next(r for r in aa_rows if r["metric"] == "ran_tests")["verdict"]
    # The answer states the family's established gaps only.
    reading = text.split("## Answer", 1)[1].split("Reference cell:", 1)[0]
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
    """The stream of a group without a task is the one `resampling.group_key` always gave."""
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
        cell_key=resampling.group_key("ran_tests", "rule"),
        reference_key=resampling.group_key("ran_tests", "nothing"),
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
    from agentab import stats
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


def tasks_table(names) -> str:
    return "\n\n".join(f'[tasks.{name}]\nprompt = "Task {name}."' for name in names)


def fill_tasks(folder: Path, values: dict) -> None:
    """`values[cell, task]`: the ran_tests of each repetition; turns a constant 5."""
    for (cell, task), found in values.items():
        for rep, value in enumerate(found, start=1):
            write_run(folder, cell, task, rep, {"ran_tests": value, "turns": 5})


def test_five_tasks_all_passed_against_all_failed_report_a_gap_inside_its_interval(tmp_path):
    """Audit data: 3/3 against 0/3 in each of 5 tasks gave +1.00 with [+0.53, +0.93]."""
    names = [f"t{i}" for i in range(5)]
    folder = write_folder(tmp_path / "results", tasks=tasks_table(names), repetitions=3)
    fill_tasks(folder, {("rule", t): [True] * 3 for t in names})
    fill_tasks(folder, {("nothing", t): [False] * 3 for t in names})
    synthesize(folder)
    row = by_key(read_csv(folder / "gaps.csv"), "cell", "task", "metric")[
        "rule", "all", "ran_tests"
    ]
    gap, low, high = (float(row[name]) for name in ("gap", "ci_low", "ci_high"))
    assert gap == 1.0
    assert 0 < low <= gap <= high <= 1.0
    assert row["verdict"] == "established"
    # The observed deal is one of the draws: p is never 0, however extreme the gap.
    assert float(row["p"]) == 2 / stats.DRAWS
    summary = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "| +100 pp | [" in summary


def test_a_gap_of_zero_over_unequal_runs_is_never_established(tmp_path):
    """Audit data: 0/3 against 0/20 in each of 20 tasks was established with a gap of 0."""
    names = [f"t{i}" for i in range(20)]
    folder = write_folder(tmp_path / "results", tasks=tasks_table(names), repetitions=20)
    fill_tasks(folder, {("rule", t): [False] * 3 for t in names})
    fill_tasks(folder, {("nothing", t): [False] * 20 for t in names})
    result = synthesize(folder)
    gap = next(g for g in result.family if g.metric == "ran_tests")
    assert gap.verdict.gap == 0
    assert gap.verdict.p == 1.0
    assert not gap.verdict.is_established
    assert gap.verdict.ci_low <= 0 <= gap.verdict.ci_high


def test_a_shuffle_that_ties_the_observed_deal_counts_as_reaching_it(tmp_path):
    """Rare rates: 0/5 against 0/5 in one task, 2/5 against 0/5 in the other. A deal gives the
    cell both successes 10 times in 45, a tie with the observed gap, so p = 2 x 10/45. Ties
    broken by rounding (the observed gap computed apart from the shuffles) established this
    in every experiment, and a rare rate in one null experiment out of ten."""
    names = ["a", "b"]
    folder = write_folder(tmp_path / "results", tasks=tasks_table(names), repetitions=5)
    fill_tasks(folder, {("rule", "a"): [False] * 5, ("nothing", "a"): [False] * 5})
    fill_tasks(folder, {("rule", "b"): [True] * 2 + [False] * 3, ("nothing", "b"): [False] * 5})
    result = synthesize(folder)
    gap = next(g for g in result.family if g.metric == "ran_tests")
    assert gap.verdict.gap == pytest.approx(0.2)
    assert not gap.verdict.is_established
    assert gap.verdict.p == pytest.approx(2 * 10 / 45, abs=0.02)


def test_one_named_task_is_judged_exactly_as_one_task(tmp_path):
    """Audit: the same data under [tasks.only] gave [+0.08, +0.75], under [task] [+0.17, +0.83]:
    one task, whatever its name, gets the same numbers from the same random streams."""
    ran = {"nothing": [True] * 3 + [False] * 7, "rule": [True] * 8 + [False] * 2}
    outputs = {}
    for name, tasks, task in (("plain", ONE_TASK, ""), ("named", tasks_table(["only"]), "only")):
        folder = write_folder(tmp_path / name, tasks=tasks, repetitions=10)
        for cell, found in ran.items():
            for rep, value in enumerate(found, start=1):
                write_run(folder, cell, task, rep, {"ran_tests": value, "turns": rep % 4 + 3})
        synthesize(folder)
        outputs[name] = {f: (folder / f).read_bytes() for f in ("cells.csv", "gaps.csv")}
    assert outputs["named"] == outputs["plain"]
    row = by_key(read_csv(tmp_path / "named" / "gaps.csv"), "cell", "metric")["rule", "ran_tests"]
    assert row["task"] == "all"


def test_a_task_a_hundred_times_the_others_weighs_as_much_as_each_of_them(tmp_path):
    """Medians pooled on the log scale: multiplying every value of one task by 100 in both
    cells changes no verdict, no p and no relative interval."""
    results = []
    for factor in (1, 100):
        folder = write_folder(tmp_path / f"x{factor}")
        for (cell, task), found in TURNS.items():
            scale = factor if task == "hard" else 1
            for rep, turns in enumerate(found, start=1):
                write_run(folder, cell, task, rep, {"ran_tests": True, "turns": turns * scale})
        result = synthesize(folder)
        gap = next(g for g in result.family if g.metric == "turns")
        relative = [end / gap.value_ref for end in (gap.verdict.ci_low, gap.verdict.ci_high)]
        results.append(
            (gap.verdict.p, gap.verdict.verdict, *relative, gap.value_cell / gap.value_ref)
        )
    assert results[1] == pytest.approx(results[0])


def test_an_aa_gap_that_does_not_survive_holm_over_the_aa_gaps_is_no_warning():
    from agentab.synthesis.families import aa_warnings, calibration_summary
    from agentab.synthesis.verdicts import Gap, SynthesisResult

    def aa_gap(metric, p, p_holm, established=True):
        state = stats.ESTABLISHED if established else stats.INCONCLUSIVE
        verdict = stats.GapVerdict(gap=0.3, ci_low=0.05, ci_high=0.6, p=p, verdict=state)
        return Gap(
            cell="nothing (A/A)", reference="nothing", metric=metric, kind="rate", n_cell=10,
            n_ref=10, value_cell=0.6, value_ref=0.3, verdict=verdict, p_holm=p_holm,
            calibration=True,
        )  # fmt: skip

    gaps = [aa_gap("a", 0.03, 0.12), aa_gap("b", 0.6, 1.0, established=False)]
    result = SynthesisResult(Path("."), "s", {}, [], {}, [], gaps)
    assert aa_warnings(result, lambda gap: "") == []
    assert "none once Holm's adjustment over the 2 A/A gaps" in calibration_summary(gaps)
    gaps[0] = aa_gap("a", 0.004, 0.008)
    [warning] = aa_warnings(result, lambda gap: "+30 pp")
    assert "differs from `nothing` on `a` (+30 pp; Holm p over the 2 A/A gaps 0.008)" in warning


def test_the_cell_page_shows_the_per_task_gaps(tmp_path):
    import html
    import re

    from agentab.report import build_report

    folder = write_folder(tmp_path / "results")
    fill_two_tasks(folder)
    synthesize(folder)
    built = build_report(folder)
    page = html.unescape((built.report_dir / "cells" / "rule.html").read_text(encoding="utf-8"))
    section = page.split("Gaps per task, sorted against the pooled gap</h3>", 1)[1]
    section = section.split("</table>", 1)[0]
    rows = [
        [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", section)
    ]
    # metric, task, cell value, reference value, gap: the rule ran the tests 5/5 against 3/5
    # on the easy task, 1/5 against 0/5 on the hard one; turns 4 against 6, 10 against 12.
    assert [row[:2] + row[4:5] for row in rows if row] == [
        ["ran_tests", "easy", "+40 pp"],
        ["ran_tests", "hard", "+20 pp"],
        ["turns", "easy", "-2"],
        ["turns", "hard", "-2"],
    ]
    reference = (built.report_dir / "cells" / "nothing.html").read_text(encoding="utf-8")
    assert "Gaps per task" not in reference
