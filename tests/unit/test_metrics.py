"""Metric types come from the values; aggregation per cell."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import proportion_confint

from agentab import metrics
from agentab.metrics import DIAGNOSTIC, MEDIAN, RATE


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([True, False, True], RATE),
        ([6, 7, 8], MEDIAN),
        ([6, 7.5, 8], MEDIAN),
        ([["#1"], ["#2"]], DIAGNOSTIC),
        (["fine", "bad"], DIAGNOSTIC),
        ([None, None], DIAGNOSTIC),
    ],
)
def test_the_type_comes_from_the_values(values, kind):
    assert metrics.metric_type(values).kind == kind


def test_a_boolean_is_not_a_number():
    decided = metrics.metric_type([True, 1])
    assert decided.kind == DIAGNOSTIC
    assert "mixed" in decided.note and "boolean" in decided.note and "number" in decided.note


def test_a_non_finite_number_makes_the_metric_diagnostic():
    assert metrics.metric_type([1.0, float("nan")]).kind == DIAGNOSTIC


def test_a_metric_without_values_is_diagnostic_with_a_note():
    decided = metrics.metric_type([])
    assert decided.kind == DIAGNOSTIC
    assert decided.note


def test_median_of_an_even_count_is_the_mean_of_the_two_middle_values():
    assert metrics.median([1, 9, 2, 4]) == 3.0
    assert metrics.median([5, 1, 3]) == 3.0


def test_a_rate_aggregates_to_k_over_n_with_its_wilson_interval():
    result = metrics.aggregate(RATE, [True] * 7 + [False] * 3)
    assert (result.k, result.n, result.value) == (7, 10, 0.7)
    low, high = proportion_confint(7, 10, alpha=0.05, method="wilson")
    assert result.dispersion == "wilson95"
    assert result.low == pytest.approx(low)
    assert result.high == pytest.approx(high)


@pytest.mark.parametrize(("k", "n"), [(0, 5), (5, 5), (1, 1), (3, 40)])
def test_the_wilson_interval_stays_in_zero_one_and_holds_the_rate(k, n):
    low, high = metrics.wilson_interval(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_a_median_aggregates_with_its_interquartile_range():
    result = metrics.aggregate(MEDIAN, [1, 2, 3, 4, 5])
    assert (result.n, result.value, result.dispersion) == (5, 3.0, "iqr")
    assert (result.low, result.high) == (2.0, 4.0)


def test_a_diagnostic_metric_is_counted_but_never_aggregated():
    result = metrics.aggregate(DIAGNOSTIC, [["#1"], []])
    assert result.n == 2
    assert result.value is None


def test_a_cell_without_values_has_no_value():
    assert metrics.aggregate(MEDIAN, []).value is None
