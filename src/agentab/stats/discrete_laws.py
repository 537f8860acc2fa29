"""Draws from a tabulated discrete law: one uniform and two table reads per draw.

A synthesis draws 10 000 values from the same few laws thousands of times: a group's count of
successes in a resample (binomial), the position of an odd group's median in a resample (an
order statistic), a cell's count of successes in a shuffle of a task (hypergeometric), the
positions of two medians in a shuffle (`median_law`). numpy's own
samplers spend 100 to 250 ns a draw on these, and a binary search of the cumulative law about
100; Walker's alias table (Vose's construction, 1991) spends a few. A table is built once per
law and kept: the laws repeat (the same group sizes and counts come back gap after gap).

The law is the one tabulated, to the rounding of its probabilities (a few units of 1e-16), and
the draws depend on the generator alone, so a fixed seed gives the same draws.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AliasTable:
    """Slot s is drawn with probability 1/size, then kept with probability `keep[s]`, else
    its `alias[s]` is taken; `values[...]` is what a slot stands for."""

    keep: np.ndarray
    alias: np.ndarray
    values: np.ndarray

    def draw(self, rng: np.random.Generator, draws: int) -> np.ndarray:
        """`draws` values of the law, from `draws` uniforms of `rng`: the whole part of
        size * u picks the slot, the fraction decides between it and its alias."""
        size = self.keep.size
        scaled = rng.random(draws) * size
        slot = np.minimum(scaled.astype(np.intp), size - 1)
        kept = (scaled - slot) < self.keep[slot]
        return self.values[np.where(kept, slot, self.alias[slot])]


def alias_table(probability: np.ndarray, values: np.ndarray) -> AliasTable:
    """The alias table of `values[i]` drawn with `probability[i]`. Only values of positive
    probability get a slot, so a value the law never gives is never drawn, whatever rounding
    leaves over."""
    support = np.flatnonzero(probability > 0)
    scaled = probability[support] / probability[support].sum() * support.size
    keep = np.ones(support.size)
    alias = np.arange(support.size)
    small = [i for i in range(support.size) if scaled[i] < 1.0]
    large = [i for i in range(support.size) if scaled[i] >= 1.0]
    # Vose: each slot short of 1 is topped up by a slot above 1, which gives that much away.
    while small and large:
        short, tall = small.pop(), large[-1]
        keep[short], alias[short] = scaled[short], tall
        scaled[tall] -= 1.0 - scaled[short]
        if scaled[tall] < 1.0:
            small.append(large.pop())
    return AliasTable(keep, alias, np.asarray(values)[support])


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


@functools.lru_cache(maxsize=256)
def order_statistic(size: int, rank: int) -> AliasTable:
    """The position (from 0) of the `rank`-th smallest of `size` draws with replacement among
    `size` sorted positions: at most j iff at least `rank` draws fall at j or below, a
    Binomial(size, (j + 1) / size) count."""
    at_or_below = np.array([_binomial_tail(size, (j + 1) / size, rank) for j in range(size)])
    probability = np.diff(at_or_below, prepend=0.0)
    return alias_table(np.clip(probability, 0.0, None), np.arange(size))


def _binomial_tail(trials: int, p: float, least: int) -> float:
    """P(Binomial(trials, p) >= least), summed from the smaller side."""
    if p >= 1.0:
        return 1.0
    counts = np.arange(trials + 1)
    log_factorial = log_factorials(trials)
    log_choose = log_factorial[trials] - log_factorial[counts] - log_factorial[trials - counts]
    mass = np.exp(log_choose + counts * np.log(p) + (trials - counts) * np.log1p(-p))
    upper = float(mass[least:].sum())
    return upper if upper < 0.5 else 1.0 - float(mass[:least].sum())


def log_factorials(largest: int) -> np.ndarray:
    """log(k!) for k = 0 .. largest."""
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, largest + 1)))))
