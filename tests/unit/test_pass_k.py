"""pass^k: the estimator, its unbiasedness, k's choice, and its gaps by the rates' rule."""

from __future__ import annotations

from fractions import Fraction
from math import comb
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentab.metrics import RATE, MetricType
from agentab.synthesis.pass_k import choose_k, pass_hat_k, pass_k_gaps
from agentab.synthesis.verdicts import ScoredValues


def test_known_values():
    assert pass_hat_k(2, 3, 2) == pytest.approx(1 / 3)
    assert pass_hat_k(3, 3, 3) == 1.0 and pass_hat_k(2, 3, 3) == 0.0
    assert pass_hat_k(5, 10, 1) == 0.5  # pass^1 is the rate
    with pytest.raises(ValueError):
        pass_hat_k(4, 3, 2)


@given(
    st.integers(min_value=1, max_value=12).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(1, n), st.fractions(0, 1, max_denominator=20))
    )
)
def test_the_estimate_is_unbiased_for_p_to_the_k(drawn):
    # Its mean over the binomial distribution of the successes is p^k, exactly.
    n, k, p = drawn
    estimate = {c: Fraction(comb(c, k), comb(n, k)) for c in range(n + 1)}
    assert all(pass_hat_k(c, n, k) == float(value) for c, value in estimate.items())
    mean = sum(comb(n, c) * p**c * (1 - p) ** (n - c) * estimate[c] for c in range(n + 1))
    assert mean == p**k


def scenario(tasks=(), repetitions=10, cells=("ref", "new")):
    return SimpleNamespace(
        cells=[SimpleNamespace(name=name, is_aa=False) for name in cells],
        reference=cells[0],
        metrics=["ok"],
        repetitions=repetitions,
        tasks=[SimpleNamespace(name=task) for task in tasks],
    )


def runs(cell: str, task: str, outcomes: str) -> list:
    return [SimpleNamespace(status="valid", cell=cell, task=task, pending=set(),
                            metrics={"ok": o == "1"}) for o in outcomes]  # fmt: skip


def test_k_is_the_repetitions_or_the_fewest_runs_of_a_group():
    assert choose_k(scenario(repetitions=3), [[1] * 5, [1] * 4]) == 3
    assert choose_k(scenario(repetitions=10), [[1] * 5, [1] * 4]) == 4
    assert choose_k(scenario(repetitions=10), [[1], [1] * 4]) is None
    assert choose_k(scenario(), [[1] * 4, []]) is None


def test_a_cell_reliable_on_half_its_tasks_beats_one_that_succeeds_half_the_time_on_each():
    # Both have a rate of 50%; pass^3: 50% of the tasks against C(5,3)/C(10,3) = 1/12.
    halves = "1010101010"
    found = runs("ref", "a", halves) + runs("ref", "b", halves)
    found += runs("new", "a", "1" * 10) + runs("new", "b", "0" * 10)
    values = ScoredValues.of(found, ["ok"])
    (gap,) = pass_k_gaps(values, scenario(("a", "b"), repetitions=3), {"ok": MetricType(RATE)})
    assert gap.metric == "ok pass^3" and gap.p_holm is None
    assert gap.value_ref == pytest.approx(1 / 12) and gap.value_cell == pytest.approx(0.5)
    assert gap.n_cell == gap.n_ref == 20 and gap.fewest_in_a_task == 10
    assert gap.verdict.ci_low <= gap.verdict.gap <= gap.verdict.ci_high


def test_a_gap_is_established_when_its_interval_excludes_zero():
    found = [run for task in "ab" for run in runs("ref", task, "0" * 6)]
    found += runs("new", "a", "111110") + runs("new", "b", "111111")
    values = ScoredValues.of(found, ["ok"])
    (gap,) = pass_k_gaps(values, scenario(("a", "b"), repetitions=2), {"ok": MetricType(RATE)})
    assert gap.value_cell == pytest.approx((comb(5, 2) / comb(6, 2) + 1) / 2)
    assert gap.verdict.is_established and gap.verdict.ci_low > 0


def test_too_few_runs_is_never_established():
    found = [run for task in "ab" for run in runs("ref", task, "00")]
    found += [run for task in "ab" for run in runs("new", task, "11")]
    values = ScoredValues.of(found, ["ok"])
    (gap,) = pass_k_gaps(values, scenario(("a", "b"), repetitions=2), {"ok": MetricType(RATE)})
    assert not gap.verdict.is_established and "needs at least 9 per group" in gap.note


def test_one_task_has_no_pass_k():
    found = runs("ref", "", "0" * 12) + runs("new", "", "1" * 12)
    values = ScoredValues.of(found, ["ok"])
    assert pass_k_gaps(values, scenario(repetitions=3), {"ok": MetricType(RATE)}) == []


def laundered(outcomes: str) -> list:
    """Two tasks of the new cell: `1` a success, `0` a failure, `x` a failure its agent made
    invalid (a report spoiled from inside the code under test)."""
    found = []
    for task in "ab":
        found += runs("new", task, outcomes.replace("x", ""))
        found += [SimpleNamespace(status="invalid", cell="new", task=task, pending=set(),
                                  metrics={}) for _ in range(outcomes.count("x"))]  # fmt: skip
        found += runs("ref", task, "11110000")
    return found


def test_failures_made_invalid_do_not_establish_a_pass_k_gap():
    types = {"ok": MetricType(RATE)}
    honest = ScoredValues.of(laundered("11111000"), ["ok"])
    (gap,) = pass_k_gaps(honest, scenario(("a", "b"), repetitions=8), types)
    assert gap.metric == "ok pass^8" and not gap.verdict.is_established
    # Laundered: 5/5 a task, pass^5 of 1 against 0; scored alone, its interval excludes 0.
    values = ScoredValues.of(laundered("11111xxx"), ["ok"])
    (gap,) = pass_k_gaps(values, scenario(("a", "b"), repetitions=8), types)
    assert gap.metric == "ok pass^5" and gap.verdict.ci_low > 0
    assert gap.verdict.verdict == "inconclusive"
    assert "the 6 invalid or failed runs of the cell and the 0 of the reference" in gap.note
