"""Each fast path of the resampling draws what the plain way draws: a large sample of each,
compared by a chi-square test of the two counts (the draws take few distinct values).

The fast paths: the exact law of two medians' positions in a shuffle (`median_law`) against
shuffling every run; the alias tables (`discrete_laws`) against numpy's own choice from the
law, its binomial and hypergeometric samplers, and resampling by index; the pooled rate's
shuffles, drawn as hypergeometric counts, against shuffling each task's runs. The seeds are
fixed, so a test gives the same answer every time; a positive control shows the comparison
tells apart two laws that differ by less than a wrong fast path would.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, chi2_contingency, hypergeom

from agentab.metrics import MEDIAN, RATE
from agentab.stats import discrete_laws, resampling

pytestmark = pytest.mark.slow

DRAWS = 100_000
# Below this p-value the two samples are not of one law. The seeds are fixed: a fast path
# that passes passes every time, and one off by a percent of a value's share fails.
SAME_LAW = 1e-4


def same_law_p(fast: np.ndarray, plain: np.ndarray) -> float:
    """The chi-square p-value that two samples of a discrete law are of the same law (values
    seen fewer than 20 times in both, together, are one category)."""
    values, where = np.unique(np.concatenate([fast, plain]), return_inverse=True)
    counts = np.vstack(
        [
            np.bincount(where[: fast.size], minlength=values.size),
            np.bincount(where[fast.size :], minlength=values.size),
        ]
    )
    common = counts.sum(axis=0) >= 20
    table = counts[:, common]
    if (~common).any():
        table = np.column_stack([table, counts[:, ~common].sum(axis=1)])
    return float(chi2_contingency(table).pvalue)


def test_the_comparison_tells_apart_laws_a_percent_apart():
    """The positive control: a binomial count at 0.40 and at 0.41 are told apart."""
    rng = np.random.default_rng(1)
    assert same_law_p(rng.binomial(67, 0.40, DRAWS), rng.binomial(67, 0.41, DRAWS)) < SAME_LAW
    assert same_law_p(rng.binomial(67, 0.40, DRAWS), rng.binomial(67, 0.40, DRAWS)) > SAME_LAW


def shuffled_median_gaps(cell: list, reference: list, rng, draws: int) -> np.ndarray:
    """The plain way: every run of the task shuffled, the first len(cell) the cell's."""
    runs = np.tile(np.asarray(cell + reference, dtype=float), (draws, 1))
    dealt = rng.permuted(runs, axis=1)
    ours = len(cell)
    return np.median(dealt[:, :ours], axis=1) - np.median(dealt[:, ours:], axis=1)


@pytest.mark.parametrize(
    ("ours", "others"),
    [(21, 17), (20, 15), (15, 20), (24, 30), (9, 9), (1, 40)],
    ids=["odd-odd", "even-odd", "odd-even", "even-even", "equal", "one-run"],
)
def test_the_exact_law_of_two_medians_is_the_law_of_shuffling_every_run(ours, others):
    values = np.random.default_rng(ours * 100 + others).integers(0, 25, ours + others)
    cell, reference = values[:ours].tolist(), values[ours:].tolist()  # ties among them
    assert resampling.median_law.covers(ours, others)  # drawn from the law, not shuffled
    fast = resampling.dealt_median_gaps(
        [cell], [reference], np.random.default_rng(2), DRAWS, lambda gaps: gaps
    )[1:]
    plain = shuffled_median_gaps(cell, reference, np.random.default_rng(3), DRAWS)
    assert same_law_p(fast, plain) > SAME_LAW


def test_a_median_gap_pooled_on_the_log_scale_over_tasks_is_the_law_of_shuffling():
    tasks = [(11, 14), (8, 8), (13, 6)]
    rng = np.random.default_rng(4)
    cells = [rng.integers(1, 12, size).tolist() for size, _ in tasks]
    references = [rng.integers(2, 15, size).tolist() for _, size in tasks]
    fast = resampling.dealt_median_gaps(cells, references, np.random.default_rng(5), DRAWS, np.log)[
        1:
    ]
    plain = np.zeros(DRAWS)
    shuffler = np.random.default_rng(6)
    for cell, reference in zip(cells, references, strict=True):
        runs = np.tile(np.asarray(cell + reference, dtype=float), (DRAWS, 1))
        dealt = shuffler.permuted(runs, axis=1)
        mine, theirs = dealt[:, : len(cell)], dealt[:, len(cell) :]
        plain += np.log(np.median(mine, axis=1)) - np.log(np.median(theirs, axis=1))
    plain /= len(tasks)
    # The same sums in another order: rounded to a common grid before they are counted.
    assert same_law_p(np.round(fast, 9), np.round(plain, 9)) > SAME_LAW


@pytest.mark.parametrize(("trials", "successes"), [(10, 3), (67, 40), (334, 101)])
def test_an_alias_table_draws_the_binomial_as_numpy_does(trials, successes):
    fast = discrete_laws.binomial(trials, successes).draw(np.random.default_rng(7), DRAWS)
    plain = np.random.default_rng(8).binomial(trials, successes / trials, DRAWS)
    assert same_law_p(fast, plain) > SAME_LAW


@pytest.mark.parametrize(("good", "bad", "sample"), [(3, 4, 3), (50, 84, 67), (12, 30, 21)])
def test_an_alias_table_draws_the_hypergeometric_as_numpy_does(good, bad, sample):
    fast = discrete_laws.hypergeometric(good, bad, sample).draw(np.random.default_rng(9), DRAWS)
    plain = np.random.default_rng(10).hypergeometric(good, bad, sample, DRAWS)
    assert same_law_p(fast, plain) > SAME_LAW


@pytest.mark.parametrize(
    "law",
    [lambda: (np.arange(68), binom.pmf(np.arange(68), 67, 0.3)),
     lambda: (np.arange(50), hypergeom.pmf(np.arange(50), 134, 50, 67)),
     lambda: (np.arange(5) * 10, np.array([0.5, 0.2, 0.0, 0.25, 0.05]))],
    ids=["binomial", "hypergeometric", "uneven"],
)  # fmt: skip
def test_an_alias_table_of_any_law_draws_as_numpys_choice(law):
    values, probability = law()
    probability = probability / probability.sum()
    fast = discrete_laws.alias_table(probability, values).draw(np.random.default_rng(11), DRAWS)
    plain = np.random.default_rng(12).choice(values, size=DRAWS, p=probability)
    assert same_law_p(fast, plain) > SAME_LAW


@pytest.mark.parametrize("size", [9, 67, 301])
def test_a_resampled_medians_position_is_the_middle_of_resampling_by_index(size):
    """An odd group's resampled median sits at a position drawn from an alias table."""
    middle = (size + 1) // 2
    fast = discrete_laws.order_statistic(size, middle).draw(np.random.default_rng(13), DRAWS)
    positions = np.random.default_rng(14).integers(0, size, (DRAWS, size))
    plain = np.partition(positions, middle - 1, axis=1)[:, middle - 1]
    assert same_law_p(fast, plain) > SAME_LAW


@pytest.mark.parametrize("size", [10, 11, 68])
def test_a_groups_resampled_median_and_rate_are_those_of_resampling_by_index(size):
    values = np.random.default_rng(size).integers(0, 30, size).astype(float)
    by_index = values[np.random.default_rng(15).integers(0, size, (DRAWS, size))]
    fast = resampling.resample_statistic(MEDIAN, values, np.random.default_rng(16), DRAWS)
    assert same_law_p(fast, np.median(by_index, axis=1)) > SAME_LAW
    passed = values > 12
    fast = resampling.resample_statistic(RATE, passed, np.random.default_rng(17), DRAWS)
    assert same_law_p(fast, (by_index > 12).mean(axis=1)) > SAME_LAW


def test_a_pooled_rates_shuffles_are_those_of_shuffling_each_tasks_runs():
    rng = np.random.default_rng(18)
    shapes = [(12, 9, 0.3), (7, 15, 0.6), (20, 20, 0.5)]
    cell = [(rng.random(ours) < rate).tolist() for ours, _, rate in shapes]
    reference = [(rng.random(others) < rate).tolist() for _, others, rate in shapes]
    fast = resampling.dealt_rate_ratios(cell, reference, np.random.default_rng(19), DRAWS)[1:]
    shuffler = np.random.default_rng(20)
    plain = np.empty(DRAWS)
    dealt_tasks = [
        shuffler.permuted(np.tile(np.array(mine + theirs, dtype=float), (DRAWS, 1)), axis=1)
        for mine, theirs in zip(cell, reference, strict=True)
    ]
    for draw in range(DRAWS):
        mine = [dealt[draw, : len(c)] for dealt, c in zip(dealt_tasks, cell, strict=True)]
        theirs = [dealt[draw, len(c) :] for dealt, c in zip(dealt_tasks, cell, strict=True)]
        gap, error = resampling.pooled_rate_gap(mine, theirs)
        plain[draw] = gap / error
    assert same_law_p(np.round(fast, 9), np.round(plain, 9)) > SAME_LAW
