"""The verdict on a gap: its interval, p-value and state from the draws, and Holm.

The rule, exactly as the scenario's readers are told it:

- a gap is statistic(cell) - statistic(reference), the statistic being the rate of a boolean
  metric or the median of a numeric one (with several tasks, their equal-weight mean over tasks:
  `strata`);
- the gap is resampled ``DRAWS`` times with a fixed seed (`resampling`: the bootstrap of each
  group with one task, the stratified permutation with several);
- the 95% percentile interval of the resampled gaps decides: **established** if it excludes 0
  strictly (``ci_low > 0`` or ``ci_high < 0``), else **inconclusive**. Two states, never three;
- p = 2 x the share of resampled gaps on the far side of zero (a draw equal to 0 counts as far
  side), capped at 1; a gap of exactly 0 has p = 1. Holm adjusts p over every gap of a table.
  The p-value changes no verdict.

The interval always holds the reported gap (`verdict_from_draws` widens it to the gap when the
draws sit all on one side of it), so a gap of 0 is never established. Any way of making draws
can feed this module: a sequential rule that gives an interval instead of draws would call
`verdict_from_interval`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agentab.stats.resampling import (
    DRAWS,
    SEED,
    generator_for,
    resample_statistic,
    statistic,
)

# Fewer valid runs than this in either group and a gap is never established: a percentile
# bootstrap of one or two values has (almost) no spread, so chance alone looks certain. The
# number is the smallest group size from which the rule's false-positive rate stays at or under
# 5% in simulation (benchmarks/sim_small_samples.py; the table is in docs/synthesis.md).
MIN_RUNS_PER_GROUP = 9
# With several tasks, a pooled gap also needs this many valid runs of each cell in each task.
MIN_RUNS_PER_TASK = 3
CONFIDENCE = 0.95
ESTABLISHED = "established"
INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class GapVerdict:
    """A gap, its 95% interval and p-value, and the state they give."""

    gap: float
    ci_low: float
    ci_high: float
    p: float
    verdict: str

    @property
    def is_established(self) -> bool:
        return self.verdict == ESTABLISHED


def verdict_from_draws(
    gap: float, gap_draws: np.ndarray, bounds: tuple[float, float] | None = None
) -> GapVerdict:
    """Interval, p-value and state of an observed gap from its resampled gaps.

    The interval always holds the gap it is reported with: were the draws all on one side of
    it, the interval is widened to reach it (so a gap of 0 is never established). `bounds`, if
    given, are the values a gap can take at all (a rate gap: -1 to 1): an end is cut there.
    """
    ci_low, ci_high = percentile_interval(gap_draws)
    return verdict_from_interval(gap, ci_low, ci_high, two_sided_p(gap, gap_draws), bounds)


def percentile_interval(gap_draws: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of the draws: np.percentile at 2.5 and 97.5 (its "linear"
    method)."""
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(np.asarray(gap_draws, dtype=float), [tail, 100 - tail])
    return float(low), float(high)


def verdict_from_interval(
    gap: float,
    ci_low: float,
    ci_high: float,
    p: float,
    bounds: tuple[float, float] | None = None,
) -> GapVerdict:
    """The state of a gap from its 95% interval: established iff it excludes 0 strictly."""
    ci_low, ci_high = min(ci_low, gap), max(ci_high, gap)
    if bounds is not None:
        ci_low, ci_high = max(ci_low, bounds[0]), min(ci_high, bounds[1])
    established = ci_low > 0 or ci_high < 0
    return GapVerdict(
        gap=gap,
        ci_low=ci_low,
        ci_high=ci_high,
        p=p,
        verdict=ESTABLISHED if established else INCONCLUSIVE,
    )


def verdicts_from_draws(gaps: Sequence[float], gap_draws: np.ndarray) -> list[GapVerdict]:
    """`verdict_from_draws` for many gaps: row i of `gap_draws` holds gap i's resampled gaps."""
    return [verdict_from_draws(gap, row) for gap, row in zip(gaps, gap_draws, strict=True)]


def two_sided_p(gap: float, gap_draws: np.ndarray) -> float:
    """2 x the share of draws on the far side of zero (0 itself counts as far side), capped at 1."""
    if gap == 0:
        return 1.0
    far_side = gap_draws <= 0 if gap > 0 else gap_draws >= 0
    return min(1.0, 2 * float(np.count_nonzero(far_side)) / gap_draws.size)


def bootstrap_gap(
    kind: str,
    cell_values: Sequence[float],
    reference_values: Sequence[float],
    *,
    cell_key: str,
    reference_key: str,
    draws: int = DRAWS,
    seed: int = SEED,
) -> GapVerdict:
    """The verdict on statistic(cell) - statistic(reference) for one metric.

    Each key names its group (see `group_key`), so the draws of a group never depend on which
    other gaps were computed before it.
    """
    cell_draws = resample_statistic(kind, cell_values, generator_for(cell_key, seed), draws)
    reference_draws = resample_statistic(
        kind, reference_values, generator_for(reference_key, seed), draws
    )
    gap = statistic(kind, cell_values) - statistic(kind, reference_values)
    return verdict_from_draws(gap, cell_draws - reference_draws)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values, in the order given."""
    count = len(p_values)
    order = sorted(range(count), key=lambda i: (p_values[i], i))
    adjusted = [0.0] * count
    running_max = 0.0
    for rank, index in enumerate(order):
        running_max = max(running_max, min(1.0, (count - rank) * p_values[index]))
        adjusted[index] = running_max
    return adjusted
