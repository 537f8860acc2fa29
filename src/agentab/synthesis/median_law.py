"""The exact law of two cells' medians when a task's runs are dealt back to them at random.

A stratified shuffle (`resampling.dealt_median_gaps`) deals a task's N runs back to the two
cells, m to the cell and N - m to the reference, every deal equally likely. Permuting the runs
10 000 times moves every run of every deal, yet a median gap only reads one position of each
cell among the N sorted values. This module draws those two positions from their exact joint
law instead, so a draw costs the same at 6 runs or 600.

With odd group sizes, each cell's median is one order statistic: the cell's ka-th smallest
(ka = (m + 1) / 2) and the reference's kb-th. Say the cell's median sits at sorted position i
and the reference's at j > i (positions counted from 1). A deal with those medians splits the
other positions into three blocks, and the counts in each block are fixed:

- below i: i - 1 positions, ka - 1 of them the cell's (the rest, i - ka, the reference's);
- between i and j: j - i - 1 positions, the reference's kb - 1 - (i - ka) of them;
- above j: N - j positions, the cell's the m - ka not yet placed.

Any arrangement within a block gives the same medians, so the number of such deals is the
product of three binomials, and its probability that over C(N, m). j < i is the same with the
cells' roles swapped. The positions are of the sorted values, so ties need no care: equal values
at two positions give equal medians. An even group's median averages two order statistics, and
their joint law with the other cell's is not tabulated here: `covers` says which sizes are, and
the caller shuffles the others.
"""

from __future__ import annotations

import functools

import numpy as np

from agentab.synthesis import discrete_laws

# Above this many runs in a task the N x N table of the law costs more memory than shuffling
# saves (1 000 runs: a table of a million entries, 8 MB).
LARGEST_TASK = 1_000


def covers(ours: int, others: int) -> bool:
    """Whether the joint law of the medians of groups of these sizes is tabulated here."""
    return ours % 2 == 1 and others % 2 == 1 and ours + others <= LARGEST_TASK


def draw_median_positions(
    ours: int, others: int, rng: np.random.Generator, draws: int
) -> tuple[np.ndarray, np.ndarray]:
    """`draws` random deals' sorted positions (from 0) of the cell's median and the reference's,
    for a task of `ours` runs of the cell and `others` of the reference, drawn from their joint
    law (one uniform a draw)."""
    mine, theirs, _ = joint_median_law(ours, others)
    pair = _pairs(ours, others).draw(rng, draws)
    return mine[pair], theirs[pair]


@functools.lru_cache(maxsize=64)
def joint_median_law(ours: int, others: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs (cell's median position, reference's median position), from 0, that some deal
    gives, and their probabilities (summing to 1 but for rounding)."""
    if not covers(ours, others):
        raise ValueError(f"no tabulated median law for groups of {ours} and {others} runs")
    size = ours + others
    log_factorial = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, size + 1)))))
    position = np.arange(1, size + 1)
    i, j = np.meshgrid(position, position, indexing="ij")  # the cell's, the reference's
    middle_ours, middle_others = (ours + 1) // 2, (others + 1) // 2
    below = _log_deals(log_factorial, i, j, middle_ours, middle_others, ours, size)
    above = _log_deals(log_factorial, j, i, middle_others, middle_ours, others, size)
    log_count = np.where(i < j, below, np.where(j < i, above, -np.inf))
    everything = _log_binomial(log_factorial, np.array(size), np.array(ours))
    probability = np.exp(log_count - everything).ravel()
    support = np.flatnonzero(probability > 0)
    mine, theirs = np.divmod(support, size)
    return mine, theirs, probability[support]


@functools.lru_cache(maxsize=64)
def _pairs(ours: int, others: int) -> discrete_laws.AliasTable:
    """The alias table of the index of a pair in `joint_median_law`."""
    probability = joint_median_law(ours, others)[2]
    return discrete_laws.alias_table(probability, np.arange(probability.size))


def _log_deals(log_factorial, low, high, k_low, k_high, size_low, size):
    """log of the number of deals in which the group of `size_low` runs has its k_low-th value
    at position `low` and the other group its k_high-th at `high` > low (the three blocks of the
    module's docstring)."""
    between = high - low - 1
    others_between = k_high - 1 - (low - k_low)
    low_above = size_low - k_low - (between - others_between)
    return (
        _log_binomial(log_factorial, low - 1, k_low - 1)
        + _log_binomial(log_factorial, between, others_between)
        + _log_binomial(log_factorial, size - high, low_above)
    )


def _log_binomial(log_factorial: np.ndarray, top: np.ndarray, bottom) -> np.ndarray:
    """log C(top, bottom) elementwise; -inf where no such choice exists."""
    top, bottom = np.broadcast_arrays(np.asarray(top), np.asarray(bottom))
    valid = (top >= 0) & (bottom >= 0) & (bottom <= top)
    safe_top, safe_bottom = np.where(valid, top, 0), np.where(valid, bottom, 0)
    found = (
        log_factorial[safe_top] - log_factorial[safe_bottom] - log_factorial[safe_top - safe_bottom]
    )
    return np.where(valid, found, -np.inf)
