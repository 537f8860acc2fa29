"""The denominator belongs to the experiment: a gap is never established because runs went
missing from one cell. The laundering experiment: the same agent in both cells, and the failing
runs of one cell made invalid from inside the code under test."""

from __future__ import annotations

import csv

from agentab.synthesis.synthesize import synthesize
from tests.unit.test_synthesis import write_run, write_scenario

RUNS = 20


def read_gap(folder, metric="ran_tests") -> dict:
    with (folder / "gaps.csv").open(newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["metric"] == metric]
    (row,) = [row for row in rows if row["task"] == "all"]
    return row


def laundered(folder, *, launder: bool, rule_passes=17, reference_passes=15):
    """Twenty runs a cell. Of the rule cell's failing runs, `launder` makes each invalid (its
    report spoiled from inside the code under test) instead of failing."""
    write_scenario(folder, repetitions=RUNS)
    for rep in range(1, RUNS + 1):
        write_run(folder, "nothing", rep, {"ran_tests": rep <= reference_passes, "turns": 5})
        passed = rep <= rule_passes
        if passed or not launder:
            write_run(folder, "rule", rep, {"ran_tests": passed, "turns": 5})
        else:
            write_run(
                folder,
                "rule",
                rep,
                {},
                status="invalid",
                problems=["validator tests: report forged"],
            )
    return folder


def test_failing_runs_laundered_as_invalid_establish_no_gap(tmp_path):
    honest = read_gap(synthesize(laundered(tmp_path / "honest", launder=False)).results_dir)
    assert honest["verdict"] == "inconclusive"  # +10 pp on 20 runs a cell
    folder = laundered(tmp_path / "laundered", launder=True)
    synthesize(folder)
    gap = read_gap(folder)
    # Scored alone, 17/17 against 15/20 would be +25 pp, its interval above zero.
    assert float(gap["gap"]) == 0.25
    assert float(gap["ci_low"]) > 0
    assert gap["verdict"] == "inconclusive"
    report = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "counted against it (interval then " in report
    assert "the 3 invalid or failed runs of the cell and the 0 of the reference" in report
    assert " pp): runs that left the denominator could have made it" in report  # a rate in pp


def test_a_gap_that_survives_its_unscored_runs_stays_established(tmp_path):
    folder = laundered(tmp_path / "results", launder=True, rule_passes=18, reference_passes=4)
    synthesize(folder)
    assert read_gap(folder)["verdict"] == "established"  # 18/18 (18/20 at worst) against 4/20


def test_the_reference_unscored_runs_count_for_it(tmp_path):
    """A cell below the reference, the reference's failing runs laundered: the bound counts
    them as the reference's successes... no: as its failures, the way least favourable to the
    gap below zero, and the +/- sides swap."""
    folder = write_scenario(tmp_path / "results", repetitions=RUNS)
    for rep in range(1, RUNS + 1):
        write_run(folder, "rule", rep, {"ran_tests": rep <= 15, "turns": 5})
        if rep <= 17:
            write_run(folder, "nothing", rep, {"ran_tests": True, "turns": 5})
        else:
            write_run(folder, "nothing", rep, {}, status="failed", problems=["timeout"])
    synthesize(folder)
    gap = read_gap(folder)
    assert float(gap["gap"]) == -0.25
    assert float(gap["ci_high"]) < 0
    assert gap["verdict"] == "inconclusive"


def test_a_median_gap_is_bounded_by_the_extreme_values_seen(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=RUNS, metrics=["turns"])
    for rep in range(1, RUNS + 1):
        write_run(folder, "nothing", rep, {"turns": 10 + rep % 3})
        if rep <= 12:
            write_run(folder, "rule", rep, {"turns": 12 + rep % 3})
        else:
            write_run(folder, "rule", rep, {}, status="invalid", problems=["validator x: crashed"])
    synthesize(folder)
    gap = read_gap(folder, "turns")
    assert float(gap["ci_low"]) > 0  # on the scored runs alone
    assert gap["verdict"] == "inconclusive"  # 8 of 20 counted at the lowest value seen


def test_synthesis_md_warns_where_the_cells_unscored_shares_differ(tmp_path):
    folder = laundered(tmp_path / "results", launder=True)
    synthesize(folder)
    report = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "`rule` has 3/20 (15%) runs invalid or failed against 0/20 (0%)" in report
    assert "(1 of its gaps did not)" in report
    honest = laundered(tmp_path / "honest", launder=False)
    synthesize(honest)
    assert "runs invalid or failed against" not in (honest / "synthesis.md").read_text()


def test_a_sequential_gap_is_bounded_by_its_unscored_runs_too(tmp_path):
    from tests.unit.test_sequential_synthesis import write_sequential

    fails = (1, 6, 11, 16, 21, 26)

    def decided(folder, launder: bool):
        write_sequential(folder)
        for rep in range(1, 31):  # the reference passes every other run, the rule 24 of 30
            write_run(folder, "nothing", rep, {"ran_tests": rep % 2 == 0, "turns": 5})
            if rep in fails and launder:
                write_run(folder, "rule", rep, {}, status="invalid", problems=["report spoiled"])
            else:
                write_run(folder, "rule", rep, {"ran_tests": rep not in fails, "turns": 5})
        (gap,) = [g for g in synthesize(folder).family if g.metric == "ran_tests"]
        return gap

    assert not decided(tmp_path / "honest", launder=False).verdict.is_established
    laundered = decided(tmp_path / "laundered", launder=True)
    assert laundered.sequence.established  # its failing pairs gone, the rest decide it
    assert not laundered.verdict.is_established
    assert "counted against it" in laundered.note
