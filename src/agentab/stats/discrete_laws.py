"""Draws from a tabulated discrete distribution: one uniform and two table reads per draw.

A synthesis draws 10 000 values from the same few distributions thousands of times: a group's count
of successes in a resample (binomial), the position of an odd group's median in a resample (an
order statistic), a cell's count of successes in a shuffle of a task (hypergeometric), the
positions of two medians in a shuffle (`median_law`). numpy's own
samplers spend 100 to 250 ns a draw on these, and a binary search of the cumulative distribution
about 100; Walker's alias table (Vose's construction, 1991) spends a few. A table is built once per
distribution and kept: the distributions repeat (the same group sizes and counts come back gap after
gap).

The distribution is the one tabulated, to the rounding of its probabilities (a few units of 1e-16),
and the draws depend on the generator alone, so a fixed seed gives the same draws.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class AliasTable:
    """Slot s is drawn with probability 1/size, then kept with probability `keep[s]`, else
    its `alias[s]` is taken; `values[...]` is what a slot stands for."""

    keep: np.ndarray
    alias: np.ndarray
    values: np.ndarray
    # What a draw reads, derived from the three above (`_drawing_arrays`).
    threshold: np.ndarray = field(init=False, repr=False, compare=False)
    outcomes: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        threshold, outcomes = _drawing_arrays(self.keep, self.alias, self.values)
        object.__setattr__(self, "threshold", threshold)
        object.__setattr__(self, "outcomes", outcomes)

    def draw(self, rng: np.random.Generator, draws: int) -> np.ndarray:
        """`draws` values of the distribution, from `draws` uniforms of `rng`: the whole part of
        size * u picks the slot, its fraction decides between the slot and its alias."""
        scaled = rng.random(draws)
        scaled *= self.keep.size  # below size: u < 1 rounds down to a double below it (tested)
        # 32-bit slots where twice the size fits (every table of a synthesis), read by take:
        # a sixth of a draw's cost less than intp slots and indexing, 4 000 draws a synthesis.
        slot = scaled.astype(self.slot_type)
        aliased = scaled >= self.threshold.take(slot)  # the fraction reaches keep[slot]
        slot <<= 1
        slot += aliased
        return self.outcomes.take(slot)

    @property
    def slot_type(self) -> type:
        return np.int32 if self.keep.size < 2**30 else np.intp


def _drawing_arrays(keep: np.ndarray, alias: np.ndarray, values: np.ndarray):
    """The slot's value and its alias's side by side (2s and 2s + 1), and for each slot s the
    smallest double T with T - s >= keep[s]: for a scaled uniform x in slot s, x - s is exact
    (Sterbenz), so `x - s < keep[s]` holds iff `x < T`, one comparison without the
    subtraction, and the same draws to the last one."""
    start = np.arange(keep.size, dtype=float)
    nearest = start + keep
    threshold = np.where(nearest - start >= keep, nearest, np.nextafter(nearest, np.inf))
    outcomes = np.empty(2 * keep.size, dtype=np.asarray(values).dtype)
    outcomes[0::2], outcomes[1::2] = values, np.asarray(values)[alias]
    return threshold, outcomes


def alias_table(probability: np.ndarray, values: np.ndarray) -> AliasTable:
    """The alias table of `values[i]` drawn with `probability[i]`. Only values of positive
    probability get a slot, so a value the distribution never gives is never drawn, whatever
    rounding leaves over."""
    support = np.flatnonzero(probability > 0)
    # Python floats: the same double arithmetic as numpy's scalars, at a tenth of the cost
    # (a table is built slot by slot, and a synthesis builds hundreds).
    scaled = (probability[support] / probability[support].sum() * support.size).tolist()
    keep = [1.0] * support.size
    alias = list(range(support.size))
    small = [i for i in range(support.size) if scaled[i] < 1.0]
    large = [i for i in range(support.size) if scaled[i] >= 1.0]
    # Vose: each slot short of 1 is topped up by a slot above 1, which gives that much away.
    while small and large:
        short, tall = small.pop(), large[-1]
        keep[short], alias[short] = scaled[short], tall
        scaled[tall] -= 1.0 - scaled[short]
        if scaled[tall] < 1.0:
            small.append(large.pop())
    return AliasTable(np.array(keep), np.array(alias, dtype=np.intp), np.asarray(values)[support])


@functools.lru_cache(maxsize=4096)
def binomial(trials: int, successes: int) -> AliasTable:
    """The count of successes among `trials` draws with replacement from `trials` runs of which
    `successes` succeeded: Binomial(trials, successes / trials)."""
    counts = np.arange(trials + 1)
    log_factorial = log_factorials(trials)
    p = successes / trials
    if p in (0.0, 1.0):  # every draw alike
        probability = (counts == successes).astype(float)
    else:
        log_choose = log_factorial[trials] - log_factorial[counts] - log_factorial[trials - counts]
        probability = np.exp(log_choose + counts * np.log(p) + (trials - counts) * np.log1p(-p))
    return alias_table(probability, counts)


@functools.lru_cache(maxsize=4096)
def binomial_rate(trials: int, successes: int) -> AliasTable:
    """`binomial`'s distribution, each count divided by `trials`: a resample's rate, as the division
    of the drawn counts gives it (the same double, one pass less a draw)."""
    table = binomial(trials, successes)
    return AliasTable(table.keep, table.alias, table.values / trials)


@functools.lru_cache(maxsize=4096)
def hypergeometric(good: int, bad: int, sample: int) -> AliasTable:
    """The count of good items in `sample` items drawn without replacement from `good` good and
    `bad` bad ones (as numpy's `Generator.hypergeometric(good, bad, sample)`)."""
    counts = np.arange(max(0, sample - bad), min(good, sample) + 1)
    log_factorial = log_factorials(good + bad)

    def log_choose(top, bottom):
        return log_factorial[top] - log_factorial[bottom] - log_factorial[top - bottom]

    log_ways = log_choose(good, counts) + log_choose(bad, sample - counts)
    probability = np.exp(log_ways - log_choose(good + bad, sample))
    return alias_table(probability, counts)


@functools.lru_cache(maxsize=4096)
def hypergeometric_places(good: int, bad: int, sample: int) -> AliasTable:
    """`hypergeometric`'s distribution, each count given as its place among the distribution's
    counts, from 1 (the distribution's counts are consecutive: a probability that rounds to 0 is at
    an end)."""
    table = hypergeometric(good, bad, sample)
    return AliasTable(table.keep, table.alias, np.arange(1, table.values.size + 1))


@functools.lru_cache(maxsize=256)
def order_statistic(size: int, rank: int) -> AliasTable:
    """The position (from 0) of the `rank`-th smallest of `size` draws with replacement among
    `size` sorted positions: at most j iff at least `rank` draws fall at j or below, a
    Binomial(size, (j + 1) / size) count."""
    at_or_below = np.array(_binomial_tails(size, rank))
    probability = np.diff(at_or_below, prepend=0.0)
    return alias_table(np.clip(probability, 0.0, None), np.arange(size))


def _binomial_tails(trials: int, least: int) -> list[float]:
    """P(Binomial(trials, (j + 1) / trials) >= least) for each j, each summed from the smaller
    side. Every distribution's masses in one array, each row as a distribution of its own would have
    them."""
    counts = np.arange(trials + 1)
    log_factorial = log_factorials(trials)
    log_choose = log_factorial[trials] - log_factorial[counts] - log_factorial[trials - counts]
    chances = [(j + 1) / trials for j in range(trials)]
    inside = [p for p in chances if p < 1.0]
    log_p = np.array([np.log(p) for p in inside]).reshape(-1, 1)
    log_q = np.array([np.log1p(-p) for p in inside]).reshape(-1, 1)
    mass = np.exp(log_choose + counts * log_p + (trials - counts) * log_q)
    tails = []
    for row in mass:
        upper = float(row[least:].sum())
        tails.append(upper if upper < 0.5 else 1.0 - float(row[:least].sum()))
    return tails + [1.0] * (len(chances) - len(inside))


def log_factorials(largest: int) -> np.ndarray:
    """log(k!) for k = 0 .. largest."""
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, largest + 1)))))
