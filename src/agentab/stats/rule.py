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

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agentab.metrics import numpy_lerp
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
# The interval's ends as quantiles, as np.percentile divides the tails it is given.
_QUANTILES = np.true_divide(
    np.array([(1 - CONFIDENCE) / 2 * 100, 100 - (1 - CONFIDENCE) / 2 * 100]), 100
)
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
    """np.percentile(gap_draws, [2.5, 97.5]) to the last bit (its "linear" method: the two
    sorted neighbours of (n - 1) * q, interpolated as numpy's _lerp does), without its general
    machinery, which cost 7 times the partition it rests on, 3 000 times in a synthesis."""
    draws = np.asarray(gap_draws, dtype=float).ravel()
    if draws.size < 2 or np.isnan(draws).any():
        tails = np.percentile(draws, 100 * _QUANTILES)
        return float(tails[0]), float(tails[1])
    previous, following, weight, kth = _interval_positions(draws.size)
    found = _tails_at(draws, kth)
    if found is None:
        ordered = np.partition(draws, kth)
        found = dict(zip(kth, ordered[kth].tolist(), strict=True))
    low, high = [found[p] for p in previous], [found[p] for p in following]
    return numpy_lerp(low[0], high[0], weight[0]), numpy_lerp(low[1], high[1], weight[1])


# How many of the draws locate the tails: from the first of them (the draws are independent, so
# they are a sample of the rest), a value surely beyond each end's positions.
TAIL_SAMPLE = 500


def _tails_at(draws: np.ndarray, kth: list[int]) -> dict[int, float] | None:
    """sorted(draws)[p] of each position p (the interval's, in each tail), from a partition of
    the tails alone; None where a sample of the draws did not mark them off (a small array,
    draws in some order). A partition of 10 000 draws costs about 130 µs in a synthesis, mostly
    mispredicted branches (the same array partitioned again and again, as a timing loop does,
    takes 25): the tails, a tenth of the draws, marked off by comparisons, about 80.

    The draws at or below a value t are the sorted draws' first ones, as many as they are: the
    p-th of them is the p-th of all, for every p below their count (the same above a value)."""
    size = draws.size
    low, high = [p for p in kth if p < size // 2], [p for p in kth if p >= size // 2]
    if size < 4 * TAIL_SAMPLE or not low or not high:
        return None
    reach_low, reach_high = max(low) + 1, size - min(high)
    # Twice the share each tail needs, and a few more: a sample that falls short is rare.
    low_rank = 2 * reach_low * TAIL_SAMPLE // size + 8
    high_rank = TAIL_SAMPLE - 1 - (2 * reach_high * TAIL_SAMPLE // size + 8)
    if low_rank >= high_rank:
        return None
    marks = np.partition(draws[:TAIL_SAMPLE], [low_rank, high_rank])
    in_low, in_high = draws <= marks[low_rank], draws >= marks[high_rank]
    below, above = np.count_nonzero(in_low), np.count_nonzero(in_high)
    if below < reach_low or above < reach_high or marks[low_rank] >= marks[high_rank]:
        return None
    # Both tails in one array, the low one first: a high position moves down by the draws
    # between the tails.
    shift = size - above - below
    tails = np.partition(draws[in_low | in_high], [*low, *(p - shift for p in high)])
    return {p: float(tails[p]) for p in low} | {p: float(tails[p - shift]) for p in high}


@functools.lru_cache(maxsize=64)
def _interval_positions(size: int) -> tuple[list[int], list[int], list[float], list[int]]:
    """The sorted positions each end of the interval reads at this many draws, the weight
    between them, and the positions a partition must place (np.unique of them would import
    numpy.ma, a twentieth of a synthesis)."""
    virtual = (size - 1) * _QUANTILES
    previous = np.floor(virtual).astype(np.intp)
    following = np.minimum(previous + 1, size - 1)
    weight = (virtual - previous).tolist()
    kth = sorted({*previous.tolist(), *following.tolist()})
    return previous.tolist(), following.tolist(), weight, kth


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
