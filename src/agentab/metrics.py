"""Metric types and their per-cell aggregation.

A scenario never declares a metric's type: the values say it. Booleans aggregate to a rate,
numbers to a median, and anything else (a list, a string, null) is diagnostic: shown per run,
never aggregated, never given a verdict. The type is decided once per metric over the valid runs
of every cell, so that two cells are always compared with the same statistic.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

RATE = "rate"
MEDIAN = "median"
DIAGNOSTIC = "diagnostic"

# Verdict fields that explain a judge's answer rather than score the run: never metrics.
REASON_FIELDS = ("reason", "reasons")

# z for a two-sided 95% interval; the Wilson interval of a rate uses it.
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class MetricType:
    """How a metric aggregates, and why, when the reason is worth telling a reader."""

    kind: str  # RATE, MEDIAN or DIAGNOSTIC
    note: str = ""


@dataclass(frozen=True)
class Aggregate:
    """One cell's value for one metric, with its dispersion.

    A rate carries k successes out of n and its Wilson 95% interval; a median carries its
    interquartile range. A diagnostic metric, or a cell without a valid value, has no value.
    """

    kind: str
    n: int
    value: float | None = None
    k: int | None = None
    dispersion: str = ""  # "wilson95" or "iqr"
    low: float | None = None
    high: float | None = None


def value_family(value: object) -> str:
    """The family a single value belongs to: 'boolean', 'number' or 'other'."""
    # bool is a subclass of int in Python, so it has to be tested first.
    if isinstance(value, bool):
        return "boolean"
    # NaN, infinities and an int beyond any float (JSON's integers have no bound) have no
    # median; they make the metric diagnostic rather than poisoning a verdict or stopping it.
    if isinstance(value, int):
        return "number" if abs(value) <= sys.float_info.max else "other"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "other"
    return "other"


def metric_type(values: Iterable[object]) -> MetricType:
    """Decide how a metric aggregates from every valid value it took, across all cells."""
    families = sorted({value_family(value) for value in values})
    if not families:
        return MetricType(DIAGNOSTIC, "no valid run returned a value")
    if len(families) > 1:
        return MetricType(DIAGNOSTIC, "mixed value types across runs: " + ", ".join(families))
    family = families[0]
    if family == "boolean":
        return MetricType(RATE)
    if family == "number":
        return MetricType(MEDIAN)
    return MetricType(DIAGNOSTIC)


def median(values: Sequence[float]) -> float:
    """The median; for an even count, the mean of the two middle values."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[middle])
    return (float(ordered[middle - 1]) + float(ordered[middle])) / 2


def interquartile_range(values: Sequence[float]) -> tuple[float, float]:
    """First and third quartiles: np.percentile(values, [25, 75])."""
    import numpy as np  # here: the workflow steps that import this module need no numpy

    low, high = np.percentile(np.asarray(values, dtype=float), [25.0, 75.0])
    return float(low), float(high)


def wilson_interval(k: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n; it stays inside [0, 1] even at 0/n and n/n."""
    if n == 0:
        raise ValueError("a rate needs at least one run")
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half_width = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half_width), min(1.0, centre + half_width)


def aggregate(kind: str, values: Sequence[object]) -> Aggregate:
    """A cell's value for a metric of the given kind, from its valid values."""
    n = len(values)
    if kind == DIAGNOSTIC or n == 0:
        return Aggregate(kind=kind, n=n)
    if kind == RATE:
        k = sum(1 for value in values if value is True)
        low, high = wilson_interval(k, n)
        return Aggregate(kind, n, value=k / n, k=k, dispersion="wilson95", low=low, high=high)
    if kind == MEDIAN:
        numbers = [float(value) for value in values]  # type: ignore[arg-type]
        low, high = interquartile_range(numbers)
        return Aggregate(kind, n, value=median(numbers), dispersion="iqr", low=low, high=high)
    raise ValueError(f"unknown metric kind {kind!r}")
