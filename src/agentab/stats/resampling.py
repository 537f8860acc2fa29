"""The draws a verdict is read from: how a gap is resampled, 10 000 times, with a fixed seed.

Two ways, one for each shape of scenario; `stats` turns either's draws into a verdict.

**One task: the bootstrap of each group.** Each group (a cell's values of a metric) is
resampled with replacement at its own size, and a draw of the gap is the difference of the two
groups' resampled statistics. Two exact shortcuts keep this fast without changing the rule:
each draws the statistic of a resample from its exact distribution instead of drawing the
resample. Resampling n booleans with replacement gives a count of successes that is
Binomial(n, k/n), so a rate's draws are binomial draws. The median of a resample of sorted
values is the value at an order statistic of the n resampled positions (the two middle ones for
an even n, averaged). Each position is floor(n * U) for a uniform U, and floor keeps the order,
so the j-th smallest position is floor(n * U_(j)), with U_(j) the j-th smallest of n uniforms: a
Beta(j, n - j + 1) draw. The next one up is the smallest of the n - j uniforms above it. Two beta
draws per resample, however many runs a group holds, and ties among the values need no care
(they sit at positions). For an odd n the one middle position's distribution is tabulated instead
(at most j iff a Binomial(n, (j + 1) / n) count reaches the middle), and drawn, as the binomial is,
from an alias table (`discrete_laws`): one uniform a draw.

**Several tasks: the stratified permutation.** A task's runs of the two cells are shuffled
between them, each cell keeping its number of runs, in every task at once; a draw is the pooled
gap that shuffle gives. Under "the cells do not differ" every shuffle is as likely as the one
observed, so the share of shuffles that reach the observed gap is an exact p-value: the 5% holds
at any number of runs, rates near 0 or 1, tasks of any scale, unequal runs per cell. The verdict
module reads the draws as `gap - draw`, so the interval is built around the reported gap.
- a rate is studentized: the pooled gap of a shuffle is divided by its standard error (each
  group's rate with one success and one failure added, Agresti and Caffo's adjustment, so that a
  group whose runs all agree still has a spread), and the draw is that ratio times the observed
  gap's standard error. A rate's spread depends on its level, and the studentized shuffle gives
  an interval for the difference even when the cells differ (Chung and Romano, 2013);
- a median is shuffled as it is, on the scale the pooled statistic uses (`strata`): the log of
  each task's median when every value is positive, so that a task 100 times the others does not
  decide alone. Its interval is the gap give or take what shuffles give: the interval of a gap
  that moves every run of a task by the same factor. A shuffle reads only the two medians'
  sorted positions (two each for an even group), so those are drawn from their exact joint
  distribution (`median_law`) instead of reassigning every run.

A random stream depends on the fixed seed and a key naming what it resamples (`seeding`),
never on the order in which the gaps are computed.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from agentab.metrics import MEDIAN, RATE, median
from agentab.stats import discrete_laws, median_law
from agentab.stats.seeding import SEED, generator_for  # noqa: F401  (this module's names)

DRAWS = 10_000
# One success and one failure added to a group's rate when its standard error is taken.
PSEUDO_RUNS = 1.0
# A task with at most this many ways of splitting its runs between two cells has them all
# listed once, and each draw picks one (12 runs: 924 splits): far cheaper than shuffling.
ENUMERATED_DEALS = 10_000
# An odd group of at most this many runs draws its resampled median's position from its
# tabulated distribution (`discrete_laws.order_statistic`: n binomial tails, once per size) rather
# than from a beta draw: a fifth of the cost, the same distribution.
TABULATED_MEDIANS = 2_001


def group_key(metric: str, cell: str) -> str:
    return f"{metric}\x1f{cell}"


def statistic(kind: str, values: Sequence[float]) -> float:
    """The rate (mean of 0/1 values) or the median (even count: mean of the two middle values)."""
    if kind == RATE:
        return count_successes(values) / len(values)
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
        return discrete_laws.binomial_rate(n, successes).draw(rng, draws)
    if kind == MEDIAN:
        return _resample_median(np.sort(array), rng, draws)
    raise ValueError(f"no statistic for metric kind {kind!r}")


def _resample_median(ordered: np.ndarray, rng: np.random.Generator, draws: int) -> np.ndarray:
    n = ordered.size
    middle = (n + 1) // 2  # the (lower) middle order statistic, counted from 1
    if n % 2 and n <= TABULATED_MEDIANS:
        return ordered[discrete_laws.order_statistic(n, middle).draw(rng, draws)]
    lower = rng.beta(middle, n - middle + 1, size=draws)
    if n % 2:
        return ordered[_position_of(lower, n)]
    upper = lower + (1 - lower) * rng.beta(1, n - middle, size=draws)
    return (ordered[_position_of(lower, n)] + ordered[_position_of(upper, n)]) / 2


def _position_of(uniform: np.ndarray, n: int) -> np.ndarray:
    """The position floor(n * u) that a uniform u in [0, 1) draws among n (a beta draw may round
    to exactly 1)."""
    return np.minimum((uniform * n).astype(np.int64), n - 1)


# Several tasks: shuffles within tasks.


def rate_variance(successes, runs):
    """The variance of a group's rate, with PSEUDO_RUNS successes and failures added (never 0)."""
    rate = (successes + PSEUDO_RUNS) / (runs + 2 * PSEUDO_RUNS)
    return rate * (1 - rate) / runs


def pooled_rate_gap(cell: Sequence[Sequence], reference: Sequence[Sequence]) -> tuple[float, float]:
    """The equal-weight mean over tasks of the rate gap, and its standard error."""
    gaps, variances = [], 0.0
    for mine, theirs in zip(cell, reference, strict=True):
        k_mine, k_theirs = count_successes(mine), count_successes(theirs)
        gaps.append(k_mine / len(mine) - k_theirs / len(theirs))
        variances += rate_variance(k_mine, len(mine)) + rate_variance(k_theirs, len(theirs))
    return float(np.mean(gaps)), float(np.sqrt(variances)) / len(gaps)


def dealt_rate_ratios(
    cell: Sequence[Sequence], reference: Sequence[Sequence], rng: np.random.Generator, shuffles: int
) -> np.ndarray:
    """Pooled gap / its standard error of the observed split (first) and of `shuffles` shuffles
    of each task's runs between the cells. A shuffle's count of the cell's successes in a task
    is hypergeometric: the task's successes fall among the cell's runs as among any equally
    many of its runs. The observed split is computed by the same arithmetic as the shuffles, so
    a shuffle that gives the observed counts gives the observed ratio to the last bit: a tie,
    as it must be (computed apart, rounding put half the ties on the near side and a rare rate
    was established in one null experiment out of ten)."""
    total = np.zeros(shuffles + 1)
    variance = np.zeros(shuffles + 1)
    for mine, theirs in zip(cell, reference, strict=True):
        n_mine, n_theirs = len(mine), len(theirs)
        successes = count_successes(mine) + count_successes(theirs)
        failures = n_mine + n_theirs - successes
        law = discrete_laws.hypergeometric(successes, failures, n_mine)
        # Each count the cell can get, the observed first: a split's terms are read from them.
        ours = np.concatenate(([count_successes(mine)], law.values)).astype(float)
        others = successes - ours
        gap = ours / n_mine - others / n_theirs
        spread = rate_variance(ours, n_mine) + rate_variance(others, n_theirs)
        # Each shuffle's place in `ours` (1 on), the observed split's 0 apart: no array joined.
        dealt = discrete_laws.hypergeometric_places(successes, failures, n_mine).draw(rng, shuffles)
        total[0] += gap[0]
        total[1:] += gap.take(dealt)
        variance[0] += spread[0]
        variance[1:] += spread.take(dealt)
    tasks = len(cell)
    total /= tasks  # (total / tasks) / (sqrt(variance) / tasks), in place
    np.sqrt(variance, out=variance)
    variance /= tasks
    total /= variance
    return total


def dealt_median_gaps(
    cell: Sequence[Sequence],
    reference: Sequence[Sequence],
    rng: np.random.Generator,
    shuffles: int,
    scale: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """The equal-weight mean over tasks of scale(median of the cell) - scale(median of the
    reference), for the observed split (first) and `shuffles` shuffles of each task's runs
    between the two cells, all by the same arithmetic (so that ties are ties)."""
    total = np.zeros(shuffles + 1)
    for mine, theirs in zip(cell, reference, strict=True):
        ordered = np.sort(np.asarray([*mine, *theirs], dtype=float))
        # The observed split: each run at its place among the sorted runs (ties anywhere among
        # equal values: the medians are the same values).
        observed = np.argsort(np.argsort([*mine, *theirs], kind="stable"), kind="stable")
        if median_law.covers(len(mine), len(theirs)):
            _add_drawn_from_the_law(total, ordered, observed, len(mine), rng, shuffles, scale)
            continue
        if math.comb(ordered.size, len(mine)) <= ENUMERATED_DEALS:
            ours, others = _every_deal(ordered.size, len(mine))
            # Each draw one of the equally likely splits: the same distribution as a shuffle.
            pick = rng.integers(0, len(ours), size=shuffles)
            ours, others = ours[pick], others[pick]
        else:
            # (Positions as 16-bit integers where they fit: a third less memory moved.)
            kind = np.int16 if ordered.size < 2**15 else np.int64
            tiled = np.tile(np.arange(ordered.size, dtype=kind), (shuffles, 1))
            positions = rng.permuted(tiled, axis=1)
            ours, others = positions[:, : len(mine)], positions[:, len(mine) :]
        ours = np.vstack([observed[: len(mine)].astype(ours.dtype), ours])
        others = np.vstack([observed[len(mine) :].astype(others.dtype), others])
        total += scale(_median_at(ordered, ours)) - scale(_median_at(ordered, others))
    total /= len(cell)
    return total


def _add_drawn_from_the_law(
    total: np.ndarray, ordered, observed, ours: int, rng, shuffles: int, scale
) -> None:
    """Adds to `total` one task's scale(median of the cell) - scale(median of the reference),
    for the observed split (first) and `shuffles` splits drawn from the exact distribution of the
    medians' positions (`median_law`): the same distribution as shuffling the runs, at a fraction of
    the cost. Each median is the mean of its two middle values (one value twice for an odd group),
    as `_median_at`."""
    others = observed.size - ours
    mine, theirs = np.sort(observed[:ours]), np.sort(observed[ours:])
    first = [mine[(ours - 1) // 2], mine[ours // 2]]
    first += [theirs[(theirs.size - 1) // 2], theirs[theirs.size // 2]]
    if ours % 2 and others % 2:
        # One middle run each: a split is one pair of the distribution's, so each pair's term is
        # computed once (the observed split's first) and the draws read them by place.
        places, positions = _median_pair_places(ours, others)
        terms = _median_terms(ordered, first, positions, scale)
        total[0] += terms[0]
        total[1:] += terms.take(places.draw(rng, shuffles))
        return
    drawn = median_law.draw_median_positions(ours, others, rng, shuffles)
    total += _median_terms(ordered, first, drawn, scale)


@functools.lru_cache(maxsize=64)
def _median_pair_places(ours: int, others: int) -> tuple[discrete_laws.AliasTable, tuple]:
    """`median_law.median_pairs`, each pair drawn as its place among the terms (from 1: the
    observed split's term comes first)."""
    pairs, positions = median_law.median_pairs(ours, others)
    return discrete_laws.AliasTable(pairs.keep, pairs.alias, pairs.values + 1), positions


def _median_terms(ordered, first, positions, scale) -> np.ndarray:
    """scale(median of the cell) - scale(median of the reference) of the observed split, whose
    middle positions are `first`, then of each split whose middle positions are `positions`
    (the cell's lower and upper, the reference's lower and upper)."""
    low_mine, high_mine, low_theirs, high_theirs = (
        ordered[np.concatenate(([start], at))] for start, at in zip(first, positions, strict=True)
    )
    return scale((low_mine + high_mine) / 2) - scale((low_theirs + high_theirs) / 2)


@functools.lru_cache(maxsize=64)
def _every_deal(size: int, ours: int) -> tuple[np.ndarray, np.ndarray]:
    """Every way of dealing `size` sorted positions, `ours` of them to the cell: (the cell's
    positions, the others'), one row per split, each row in increasing order."""
    mine = np.array(list(itertools.combinations(range(size), ours)), dtype=np.int16)
    taken = np.zeros((len(mine), size), dtype=bool)
    np.put_along_axis(taken, mine.astype(np.int64), True, axis=1)
    others = np.nonzero(~taken)[1].reshape(len(mine), size - ours).astype(np.int16)
    return mine, others


def _median_at(ordered: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Each row's median of `ordered` at those positions: the values are sorted, so the middle
    positions give the middle values."""
    n = positions.shape[1]
    low, high = (n - 1) // 2, n // 2
    middle = np.partition(positions, [low, high] if high != low else [low], axis=1)
    return (ordered[middle[:, low]] + ordered[middle[:, high]]) / 2


def count_successes(values: Sequence) -> int:
    """How many of a group's values are true."""
    return len(list(filter(None, values)))
