"""The judge against people: κ and the corrected (PPI) rate against values computed by hand."""

from __future__ import annotations

import random

import numpy as np
import pytest

from agentab import stats
from agentab.synthesis.judge_agreement import (
    Confusion,
    cohen_kappa,
    kappa_interval,
    ppi_draws,
    ppi_rate,
)

T, F = True, False
# (person, judge): 5 agree on true, 1 agree on false, 1 each way apart.
PAIRS = [(T, T)] * 5 + [(T, F), (F, T), (F, F)]


def test_the_confusion_table_puts_the_person_in_rows_and_the_judge_in_columns():
    table = Confusion.of([(T, T)] * 3 + [(T, F)] * 2 + [(F, T)] + [(F, F)] * 4)
    assert (table.both_true, table.person_only, table.judge_only, table.both_false) == (3, 2, 1, 4)
    assert (table.n, table.agreed) == (10, 7)


def test_kappa_as_computed_by_hand():
    # p_o = 6/8; both said true 6 times in 8, so chance agrees (6·6 + 2·2) / 64 = 40/64;
    # κ = (48/64 − 40/64) / (24/64) = 1/3.
    assert cohen_kappa(Confusion.of(PAIRS)) == pytest.approx(1 / 3, abs=1e-12)
    # Complete agreement on both answers is 1; answers opposite on every run are −1.
    assert cohen_kappa(Confusion.of([(T, T), (F, F)])) == pytest.approx(1.0)
    assert cohen_kappa(Confusion.of([(T, F), (F, T)])) == pytest.approx(-1.0)
    # A judge that agrees on 3 of 4 by saying true always: no agreement beyond chance.
    assert cohen_kappa(Confusion.of([(T, T), (T, T), (T, T), (F, T)])) == pytest.approx(0.0)


def test_kappa_is_undefined_when_both_gave_one_answer_to_every_run():
    assert cohen_kappa(Confusion.of([(T, T)] * 4)) is None


def test_the_kappa_interval_is_seeded_holds_kappa_and_matches_the_resampled_runs():
    table = Confusion.of(PAIRS * 4)  # κ = 1/3 again, from 32 runs
    low, high = kappa_interval(table, "key")
    assert kappa_interval(table, "key") == (low, high)
    assert low < 1 / 3 < high
    # The same interval by resampling the runs themselves (slowly, by index).
    rng = np.random.default_rng(5)
    pairs = PAIRS * 4
    kappas = []
    for _ in range(4000):
        found = cohen_kappa(Confusion.of([pairs[i] for i in rng.integers(0, 32, size=32)]))
        if found is not None:
            kappas.append(found)
    by_index = np.percentile(kappas, [2.5, 97.5])
    assert low == pytest.approx(by_index[0], abs=0.05)
    assert high == pytest.approx(by_index[1], abs=0.05)


def test_the_corrected_rate_as_computed_by_hand():
    judge = [T] * 8 + [F] * 2  # the judge's rate over all 10 runs: 0.8
    # labelled (person, judge): differences 0, −1, −1, +1, mean −1/4
    labelled = [(T, T), (F, T), (F, T), (T, F)]
    assert ppi_rate(judge, labelled) == pytest.approx(0.55, abs=1e-12)
    # A judge people agree with everywhere keeps its rate.
    assert ppi_rate(judge, [(T, T), (F, F)]) == pytest.approx(0.8)


def test_the_corrected_rate_is_unbiased_where_the_judge_is_not():
    """A judge that says true to 30% of the runs people call false: its rate is 0.4 + 0.3 × 0.6
    = 0.58 where people's is 0.4. The corrected rate, from 5 labels of 20 runs, averages 0.4."""
    rng = random.Random(11)
    judge_rates, corrected = [], []
    for _ in range(4000):
        people = [rng.random() < 0.4 for _ in range(20)]
        judge = [p or rng.random() < 0.3 for p in people]
        labelled = [(people[i], judge[i]) for i in rng.sample(range(20), 5)]
        judge_rates.append(sum(judge) / 20)
        corrected.append(ppi_rate(judge, labelled))
    assert np.mean(judge_rates) == pytest.approx(0.58, abs=0.01)
    assert np.mean(corrected) == pytest.approx(0.4, abs=0.01)


def test_the_resampled_corrected_rates_spread_as_the_normal_approximation_says():
    """Many runs and labels: the 95% interval of the draws is the estimate ± 1.96 standard
    errors, sqrt(f(1 − f)/N + var(person − judge)/n)."""
    judge = [T] * 700 + [F] * 300
    labelled = [(T, T)] * 120 + [(F, T)] * 30 + [(T, F)] * 10 + [(F, F)] * 40
    draws = ppi_draws(judge, labelled, "normal")
    assert draws.size == stats.DRAWS
    assert draws.mean() == pytest.approx(ppi_rate(judge, labelled), abs=0.003)
    differences = np.array([int(p) - int(j) for p, j in labelled])
    error = np.sqrt(0.7 * 0.3 / 1000 + differences.var() / len(labelled))
    low, high = np.percentile(draws, [2.5, 97.5])
    assert (high - low) / 2 == pytest.approx(1.96 * error, rel=0.05)
    assert np.array_equal(draws, ppi_draws(judge, labelled, "normal"))  # seeded by its key
