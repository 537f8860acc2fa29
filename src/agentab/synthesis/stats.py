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

Two exact shortcuts keep this fast without changing the rule: each draws the statistic of a
resample from its exact distribution instead of drawing the resample. Resampling n booleans with
replacement gives a count of successes that is Binomial(n, k/n), so a rate's draws are binomial
draws. The median of a resample of sorted values is the value at an order statistic of the n
resampled positions (the two middle ones for an even n, averaged). Each position is
floor(n * U) for a uniform U, and floor keeps the order, so the j-th smallest position is
floor(n * U_(j)), with U_(j) the j-th smallest of n uniforms: a Beta(j, n - j + 1) draw. The
next one up is the smallest of the n - j uniforms above it. Two beta draws per resample, however
many runs a group holds, and ties among the values need no care (they sit at positions).
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
# With several tasks, a pooled gap also needs this many valid runs of each cell in each task.
MIN_RUNS_PER_TASK = 3
SEED = 20_250_101
DRAWS = 10_000
CONFIDENCE = 0.95
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
    n = ordered.size
    middle = (n + 1) // 2  # the (lower) middle order statistic, counted from 1
    lower = rng.beta(middle, n - middle + 1, size=draws)
    if n % 2:
        return ordered[_position_of(lower, n)]
    upper = lower + (1 - lower) * rng.beta(1, n - middle, size=draws)
    return (ordered[_position_of(lower, n)] + ordered[_position_of(upper, n)]) / 2


def _position_of(uniform: np.ndarray, n: int) -> np.ndarray:
    """The position floor(n * u) that a uniform u in [0, 1) draws among n (a beta draw may round
    to exactly 1)."""
    return np.minimum((uniform * n).astype(np.int64), n - 1)


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
