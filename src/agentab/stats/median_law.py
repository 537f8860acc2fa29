"""The exact distribution of two cells' medians when a task's runs are reassigned to them at random.

A stratified shuffle (`resampling.dealt_median_gaps`) reassigns a task's N runs to the two
cells, m to the cell and N - m to the reference, every split equally likely. Permuting the runs
10 000 times moves every run of every split, yet a median gap only reads one position of each
cell among the N sorted values. This module draws those two positions from their exact joint
distribution instead, so a draw costs the same at 6 runs or 600.

With odd group sizes, each cell's median is one order statistic: the cell's ka-th smallest
(ka = (m + 1) / 2) and the reference's kb-th. Say the cell's median sits at sorted position i
and the reference's at j > i (positions counted from 1). A split with those medians divides the
other positions into three blocks, and the counts in each block are fixed:

- below i: i - 1 positions, ka - 1 of them the cell's (the rest, i - ka, the reference's);
- between i and j: j - i - 1 positions, the reference's kb - 1 - (i - ka) of them;
- above j: N - j positions, the cell's the m - ka not yet placed.

Any arrangement within a block gives the same medians, so the number of such splits is the
product of three binomials, and its probability that over C(N, m). j < i is the same with the
cells' roles swapped. The positions are of the sorted values, so ties need no care: equal values
at two positions give equal medians.

An even group's median averages its k-th and (k+1)-th values (k = m / 2). The table above, with
k the lower middle, gives the two lower medians' positions; the upper ones are drawn given them.
Given (i, j), the splits are the independent random arrangements of each block, so the cell's
next run after i is the first of its runs in the block between i and j (a block of L positions
holding c of them: after d positions with probability C(L - d, c) / C(L, c) of being further),
or, if that block holds none, the first above j; the reference's next run is the first of its
own above j. When both are sought above j, the position just above j is the cell's with
probability (the cell's runs above j) / (positions above j), and the other's next is the first
of its own above that. j < i: the same, roles swapped.
"""

from __future__ import annotations

import functools

import numpy as np

from agentab.stats import discrete_laws

# Above this many runs in a task the N x N table of the distribution costs more memory than
# shuffling saves (1 000 runs: a table of a million entries, 8 MB).
LARGEST_TASK = 1_000


def covers(ours: int, others: int) -> bool:
    """Whether the medians' distribution for groups of these sizes is drawn here (else: shuffle)."""
    return ours >= 1 and others >= 1 and ours + others <= LARGEST_TASK


def draw_median_positions(
    ours: int, others: int, rng: np.random.Generator, draws: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`draws` random splits' sorted positions (from 0) of the cell's two middle runs and the
    reference's (lower, upper; the same position twice for an odd group), for a task of `ours`
    runs of the cell and `others` of the reference, drawn from their joint distribution."""
    mine, theirs, _ = joint_median_law(ours, others)
    pair = _pairs(ours, others).draw(rng, draws)
    low_mine, low_theirs = mine[pair] + 1, theirs[pair] + 1  # counted from 1 below
    if ours % 2 and others % 2:  # one middle run each: nothing more to draw
        return low_mine - 1, low_mine - 1, low_theirs - 1, low_theirs - 1
    high_mine, high_theirs = _upper_positions(low_mine, low_theirs, ours, others, rng)
    return low_mine - 1, high_mine - 1, low_theirs - 1, high_theirs - 1


@functools.lru_cache(maxsize=64)
def joint_median_law(ours: int, others: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs (cell's lower median position, reference's lower median position), from 0,
    that some split gives, and their probabilities (summing to 1 but for rounding)."""
    if not covers(ours, others):
        raise ValueError(f"no tabulated median law for groups of {ours} and {others} runs")
    size = ours + others
    log_factorial = discrete_laws.log_factorials(size)
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


def median_pairs(ours: int, others: int):
    """For odd groups (one middle run each): the alias table of a pair's index in the joint
    distribution, and each pair's positions (from 0) as `draw_median_positions` gives them (the
    cell's twice, the reference's twice)."""
    mine, theirs, _ = joint_median_law(ours, others)
    return _pairs(ours, others), (mine, mine, theirs, theirs)


@functools.lru_cache(maxsize=64)
def _pairs(ours: int, others: int) -> discrete_laws.AliasTable:
    """The alias table of the index of a pair in `joint_median_law`."""
    probability = joint_median_law(ours, others)[2]
    return discrete_laws.alias_table(probability, np.arange(probability.size))


def _upper_positions(low_mine, low_theirs, ours: int, others: int, rng):
    """Each group's (k + 1)-th position given both lower medians' (counted from 1), drawn as
    the module's docstring says; an odd group's is its lower one."""
    size = ours + others
    log_factorial = discrete_laws.log_factorials(size)
    cell_first = low_mine < low_theirs
    # The group whose lower median is lower is `first`, at p; the other `second`, at q > p.
    p, q = np.minimum(low_mine, low_theirs), np.maximum(low_mine, low_theirs)
    middle, other_middle = (ours + 1) // 2, (others + 1) // 2
    k_first = np.where(cell_first, middle, other_middle)
    k_second = np.where(cell_first, other_middle, middle)
    runs_first = np.where(cell_first, ours, others)
    runs_second = np.where(cell_first, others, ours)
    even_first, even_second = runs_first % 2 == 0, runs_second % 2 == 0
    between = q - p - 1
    first_between = between - (k_second - 1 - (p - k_first))
    above = size - q
    first_above = runs_first - k_first - first_between
    second_above = runs_second - k_second
    next_first, next_second = p.copy(), q.copy()
    inside = even_first & (first_between > 0)
    next_first = np.where(
        inside, p + _first_of(inside, between, first_between, rng, log_factorial), next_first
    )
    both_above = even_first & even_second & (first_between == 0)
    alone = even_second & ~both_above
    next_second = np.where(
        alone, q + _first_of(alone, above, second_above, rng, log_factorial), next_second
    )
    alone = even_first & ~even_second & (first_between == 0)
    next_first = np.where(
        alone, q + _first_of(alone, above, first_above, rng, log_factorial), next_first
    )
    if both_above.any():
        # The position just above q is the first group's or the second's; the other's next is
        # the first of its own among the positions above that.
        first_there = rng.random(p.size) * above < first_above
        sought = np.where(first_there, second_above, first_above)
        beyond = q + 1 + _first_of(both_above, above - 1, sought, rng, log_factorial)
        next_first = np.where(both_above, np.where(first_there, q + 1, beyond), next_first)
        next_second = np.where(both_above, np.where(first_there, beyond, q + 1), next_second)
    return (
        np.where(cell_first, next_first, next_second),
        np.where(cell_first, next_second, next_first),
    )


def _first_of(where, length, count, rng, log_factorial) -> np.ndarray:
    """Where `where` holds: the offset (from 1) of the first of `count` marked positions among
    `length` in random order, by inverse transform: beyond d with probability
    C(length - d, count) / C(length, count), searched by halving. Elsewhere: 0, and every draw
    spends one uniform either way (so the stream does not depend on which draws needed one)."""
    log_uniform = np.log(rng.random(where.size))
    length, count = np.where(where, length, 1), np.where(where, np.maximum(count, 1), 1)
    low, high = np.ones_like(length), length - count + 1  # the last offset any split gives

    def log_beyond(offset):
        return (
            log_factorial[length - offset]
            - log_factorial[length - offset - count]
            - log_factorial[length]
            + log_factorial[length - count]
        )

    while np.any(low < high):
        searching = low < high
        middle = np.where(searching, (low + high) // 2, low)
        reached = log_beyond(middle) <= log_uniform
        high = np.where(searching & reached, middle, high)
        low = np.where(searching & ~reached, middle + 1, low)
    return np.where(where, low, 0)


def _log_deals(log_factorial, low, high, k_low, k_high, size_low, size):
    """log of the number of splits in which the group of `size_low` runs has its k_low-th value
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
