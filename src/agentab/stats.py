"""The verdict on a gap: bootstrap interval, p-value, Holm.

The rule, exactly as the scenario's readers are told it:

- a gap is statistic(cell) - statistic(reference), the statistic being the rate of a boolean
  metric or the median of a numeric one;
- each group is resampled independently, with replacement, at its own size, ``DRAWS`` times;
- the 95% percentile interval of the resampled gaps decides: **established** if it excludes 0
  strictly (``ci_low > 0`` or ``ci_high < 0``), else **inconclusive**. Two states, never three;
- p = 2 x the share of resampled gaps on the far side of zero (a draw equal to 0 counts as far
  side), capped at 1; a gap of exactly 0 has p = 1. Holm adjusts p over every gap of a table.
  The p-value changes no verdict.

Reproducibility: the random stream of a group is derived from ``SEED`` and a key naming the group
(metric and cell), never from the order in which groups are resampled, so rebuilding a table, or
a table with more cells, gives the same draws for the same group.

Two exact shortcuts keep this fast without changing the rule. Resampling n booleans with
replacement gives a count of successes that is Binomial(n, k/n), so a rate's draws are binomial
draws. The median of a resample of sorted values is the value at the median of the resampled
positions, so a median's draws partition small integer positions rather than the values; and when
a metric takes few distinct values, a resample is fully described by how many times each value
was picked (a multinomial draw), from which the median is read directly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agentab.metrics import MEDIAN, RATE, median

# Fewer valid runs than this in either group and a gap is never established: a percentile
# bootstrap of one or two values has (almost) no spread, so chance alone looks certain. The
# number is the smallest group size from which the rule's false-positive rate stays at or under
# 5% in simulation (benchmarks/sim_small_samples.py; the table is in docs/synthesis.md).
MIN_RUNS_PER_GROUP = 9
SEED = 20_250_101
DRAWS = 10_000
CONFIDENCE = 0.95
# Group size from which 16-bit resampled positions are sorted with a radix sort (same result).
RADIX_SORT_FROM = 32
ESTABLISHED = "established"
INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class GapVerdict:
    """A gap, its bootstrap interval and p-value, and the state they give."""

    gap: float
    ci_low: float
    ci_high: float
    p: float
    verdict: str

    @property
    def is_established(self) -> bool:
        return self.verdict == ESTABLISHED


def generator_for(key: str, seed: int = SEED) -> np.random.Generator:
    """A random stream that depends on the fixed seed and the key alone."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence([seed, *words]))


def group_key(metric: str, cell: str) -> str:
    return f"{metric}\x1f{cell}"


def statistic(kind: str, values: Sequence[float]) -> float:
    """The rate (mean of 0/1 values) or the median (even count: mean of the two middle values)."""
    if kind == RATE:
        return sum(1 for value in values if value) / len(values)
    if kind == MEDIAN:
        return median(values)
    raise ValueError(f"no statistic for metric kind {kind!r}")


def resample_statistic(
    kind: str, values: Sequence[float], rng: np.random.Generator, draws: int = DRAWS
) -> np.ndarray:
    """The statistic of `draws` resamples (with replacement, same size) of one group."""
    array = np.asarray(values, dtype=float)
    n = array.size
    if n == 0:
        raise ValueError("cannot resample an empty group")
    if kind == RATE:
        successes = int(np.count_nonzero(array))
        return rng.binomial(n, successes / n, size=draws) / n
    if kind == MEDIAN:
        return _resample_median(np.sort(array), rng, draws)
    raise ValueError(f"no statistic for metric kind {kind!r}")


def _resample_median(ordered: np.ndarray, rng: np.random.Generator, draws: int) -> np.ndarray:
    distinct, counts = np.unique(ordered, return_counts=True)
    # Few distinct values (turns, counts, scores) against many runs: drawing how many times
    # each value is picked is exact and far cheaper than drawing every position.
    if distinct.size * 8 <= ordered.size:
        return _median_from_counts(distinct, counts, ordered.size, rng, draws)
    return _median_from_positions(ordered, rng, draws)


def _median_from_positions(ordered: np.ndarray, rng: np.random.Generator, draws: int) -> np.ndarray:
    n = ordered.size
    position_type = np.int16 if n < 2**15 else np.int64
    positions = rng.integers(0, n, size=(draws, n), dtype=position_type)
    middle = n // 2
    # A full sort of small integers (vectorised) is several times faster than a partition, and
    # an order statistic does not depend on how it is found. Past a few dozen positions,
    # numpy's stable sort of 16-bit integers (a radix sort) is three times faster again.
    radix = position_type is np.int16 and n >= RADIX_SORT_FROM
    positions.sort(axis=1, kind="stable" if radix else None)
    if n % 2:
        return ordered[positions[:, middle]]
    return (ordered[positions[:, middle - 1]] + ordered[positions[:, middle]]) / 2


def _median_from_counts(
    distinct: np.ndarray, counts: np.ndarray, n: int, rng: np.random.Generator, draws: int
) -> np.ndarray:
    picked = rng.multinomial(n, counts / n, size=draws)
    at_or_below = np.cumsum(picked, axis=1)

    def order_statistic(rank: int) -> np.ndarray:  # rank counts from 1
        return distinct[np.argmax(at_or_below >= rank, axis=1)]

    if n % 2:
        return order_statistic(n // 2 + 1)
    return (order_statistic(n // 2) + order_statistic(n // 2 + 1)) / 2


def verdict_from_draws(gap: float, gap_draws: np.ndarray) -> GapVerdict:
    """Interval, p-value and state of an observed gap from its resampled gaps."""
    tail = (1 - CONFIDENCE) / 2 * 100
    ci_low, ci_high = (float(x) for x in np.percentile(gap_draws, [tail, 100 - tail]))
    established = ci_low > 0 or ci_high < 0
    return GapVerdict(
        gap=gap,
        ci_low=ci_low,
        ci_high=ci_high,
        p=two_sided_p(gap, gap_draws),
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
