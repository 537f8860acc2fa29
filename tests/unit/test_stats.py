"""The verdict rule: bootstrap interval, p-value and Holm, as docs/synthesis.md states them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from agentab import stats
from agentab.metrics import MEDIAN, RATE
from agentab.stats import resampling


def verdict(kind, cell, reference, tag="t"):
    return stats.bootstrap_gap(
        kind, cell, reference, cell_key=f"{tag}-cell", reference_key=f"{tag}-reference"
    )


def established_share_under_null(kind, draw_group, trials):
    rng = np.random.default_rng(12345)
    established = 0
    for trial in range(trials):
        result = verdict(kind, draw_group(rng), draw_group(rng), tag=str(trial))
        established += result.is_established
    return established / trials


def test_null_rates_are_rarely_established_at_ten_runs_per_cell():
    share = established_share_under_null(RATE, lambda rng: list(rng.random(10) < 0.5), 1000)
    assert share <= 0.06


def test_null_medians_are_rarely_established_at_ten_runs_per_cell():
    share = established_share_under_null(MEDIAN, lambda rng: list(rng.normal(size=10)), 1000)
    assert share <= 0.06


def test_a_large_rate_effect_is_established():
    result = verdict(RATE, [True] * 9 + [False], [False] * 9 + [True])
    assert result.verdict == stats.ESTABLISHED
    assert result.gap == pytest.approx(0.8)
    assert result.ci_low > 0
    assert result.p < 0.01


def test_a_large_median_effect_is_established_in_the_negative_direction():
    result = verdict(MEDIAN, [3, 4, 4, 5, 3, 4, 5, 4, 3, 4], [9, 10, 11, 10, 9, 12, 10, 11, 9, 10])
    assert result.verdict == stats.ESTABLISHED
    assert result.ci_high < 0
    assert result.gap == 4.0 - 10.0


def test_an_exactly_zero_gap_has_p_one_and_is_inconclusive():
    result = verdict(MEDIAN, [1, 2, 3, 4], [4, 3, 2, 1])
    assert result.gap == 0
    assert result.p == 1.0
    assert result.verdict == stats.INCONCLUSIVE


def test_draws_equal_to_zero_count_as_far_side():
    draws = np.array([0.0, 1.0, 1.0, 1.0])
    assert stats.two_sided_p(0.5, draws) == 0.5
    assert stats.two_sided_p(-0.5, -draws) == 0.5


def test_p_is_capped_at_one():
    assert stats.two_sided_p(0.5, np.array([-1.0, -1.0, 0.0, 1.0])) == 1.0


def test_an_interval_end_touching_zero_is_inconclusive():
    draws = np.concatenate([np.zeros(300), np.ones(9_700)])
    result = stats.verdict_from_draws(0.9, draws)
    assert result.ci_low == 0.0
    assert result.verdict == stats.INCONCLUSIVE


def test_the_same_inputs_give_the_same_verdict_whatever_was_computed_before():
    first = verdict(MEDIAN, [5, 6, 7, 6, 5], [7, 8, 9, 8, 7], tag="a")
    verdict(RATE, [True, False], [False, False], tag="b")
    again = verdict(MEDIAN, [5, 6, 7, 6, 5], [7, 8, 9, 8, 7], tag="a")
    assert first == again


def test_different_groups_get_different_random_streams():
    a = resampling.generator_for(resampling.group_key("turns", "rule · off")).integers(0, 2**31, 4)
    b = resampling.generator_for(resampling.group_key("turns", "rule · high")).integers(0, 2**31, 4)
    assert list(a) != list(b)


def test_resampled_rate_matches_resampling_by_index():
    # The binomial shortcut is exact: compare its spread with an explicit resampling.
    values = np.array([1.0] * 3 + [0.0] * 7)
    rng = np.random.default_rng(0)
    by_index = values[rng.integers(0, 10, size=(20_000, 10))].mean(axis=1)
    shortcut = resampling.resample_statistic(RATE, values, np.random.default_rng(1), 20_000)
    assert shortcut.mean() == pytest.approx(by_index.mean(), abs=0.01)
    assert shortcut.std() == pytest.approx(by_index.std(), abs=0.01)


def test_resampled_median_matches_resampling_by_index():
    values = np.array([1.0, 2.0, 2.0, 5.0, 7.0, 8.0, 13.0, 21.0])
    rng = np.random.default_rng(0)
    by_index = np.median(values[rng.integers(0, 8, size=(20_000, 8))], axis=1)
    shortcut = resampling.resample_statistic(MEDIAN, values, np.random.default_rng(1), 20_000)
    assert np.percentile(shortcut, [2.5, 50, 97.5]) == pytest.approx(
        np.percentile(by_index, [2.5, 50, 97.5]), abs=0.6
    )
    assert shortcut.mean() == pytest.approx(by_index.mean(), abs=0.1)


small_groups = st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=12)
bool_groups = st.lists(st.booleans(), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(cell=small_groups, reference=small_groups)
def test_the_verdict_always_follows_the_interval_for_medians(cell, reference):
    result = verdict(MEDIAN, cell, reference)
    assert result.is_established == (result.ci_low > 0 or result.ci_high < 0)
    assert result.ci_low <= result.ci_high
    assert 0 <= result.p <= 1


@settings(max_examples=60, deadline=None)
@given(cell=bool_groups, reference=bool_groups)
def test_the_verdict_always_follows_the_interval_for_rates(cell, reference):
    result = verdict(RATE, cell, reference)
    assert result.is_established == (result.ci_low > 0 or result.ci_high < 0)
    assert -1 <= result.ci_low <= result.ci_high <= 1
    if result.gap == 0:
        assert result.p == 1.0


p_values = st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=40)


@pytest.mark.slow  # statsmodels on a hundred drawn lists: about 25 s
@given(p_values)
def test_holm_matches_statsmodels(ps):
    expected = multipletests(ps, method="holm")[1]
    assert stats.holm(ps) == pytest.approx(list(expected), abs=1e-12)


@given(p_values)
def test_holm_never_lowers_a_p_value_and_keeps_their_order(ps):
    adjusted = stats.holm(ps)
    assert all(a >= p for a, p in zip(adjusted, ps, strict=True))
    for i in range(len(ps)):
        for j in range(len(ps)):
            if ps[i] < ps[j]:
                assert adjusted[i] <= adjusted[j]


def test_holm_of_an_empty_family_is_empty():
    assert stats.holm([]) == []


def test_many_verdicts_at_once_are_the_verdicts_one_by_one():
    rng = np.random.default_rng(7)
    draws = np.vstack([rng.normal(size=10_000), rng.integers(-3, 4, 10_000) / 10, np.zeros(10_000)])
    gaps = [0.4, -0.1, 0.0]
    together = stats.verdicts_from_draws(gaps, draws)
    alone = [stats.verdict_from_draws(gap, row) for gap, row in zip(gaps, draws, strict=True)]
    assert together == alone
    assert stats.verdicts_from_draws([], np.empty((0, 10_000))) == []


def largest_cdf_gap(expected: np.ndarray, drawn: np.ndarray) -> float:
    """The Kolmogorov distance between two samples, at the values the first one takes."""
    support = np.unique(expected)
    expected_cdf = np.searchsorted(np.sort(expected), support, side="right") / expected.size
    drawn_cdf = np.searchsorted(np.sort(drawn), support, side="right") / drawn.size
    return float(np.abs(expected_cdf - drawn_cdf).max())


@pytest.mark.parametrize(
    "values", [[2.0, 13.0, 5.0, 1.0, 7.0, 2.0], [9.0, 0.5, 1.0, 4.0, 1.0, 1.0, 9.0]]
)
def test_resampled_medians_follow_the_exact_bootstrap_distribution(values):
    # Every one of the n**n equally likely resamples, enumerated: the exact distribution.
    ordered = np.sort(values)
    n = ordered.size
    every_resample = (np.arange(n**n)[:, None] // n ** np.arange(n)) % n
    exact = np.median(ordered[every_resample], axis=1)
    drawn = resampling.resample_statistic(MEDIAN, values, np.random.default_rng(4), 200_000)
    assert set(np.unique(drawn)) <= set(np.unique(exact))
    # 0.006 is beyond the 99.9% critical value of the distance for 200 000 draws (0.0044).
    assert largest_cdf_gap(exact, drawn) < 0.006


@pytest.mark.parametrize("n", [301, 334])
def test_resampled_medians_of_a_large_group_match_resampling_by_index(n):
    values = np.random.default_rng(6).lognormal(size=n)
    positions = np.random.default_rng(7).integers(0, n, size=(20_000, n))
    by_index = np.median(values[positions], axis=1)
    drawn = resampling.resample_statistic(MEDIAN, values, np.random.default_rng(8), 20_000)
    assert largest_cdf_gap(by_index, drawn) < 0.025


def test_the_interval_always_holds_the_reported_gap():
    """Draws all above the gap (a pivot whose centre is not the gap) still give an interval
    that reaches it."""
    result = stats.verdict_from_draws(0.2, np.linspace(0.5, 0.9, 1000))
    assert result.ci_low == 0.2
    assert result.ci_high == pytest.approx(0.89, abs=0.01)


def test_a_gap_of_zero_is_never_established_whatever_the_draws():
    result = stats.verdict_from_draws(0.0, np.linspace(0.1, 0.3, 1000))
    assert (result.ci_low, result.p, result.verdict) == (0.0, 1.0, stats.INCONCLUSIVE)


def test_bounds_cut_an_interval_where_a_gap_cannot_go():
    result = stats.verdict_from_draws(0.9, np.linspace(0.6, 1.4, 1000), bounds=(-1.0, 1.0))
    assert result.ci_high == 1.0
    assert result.ci_low == pytest.approx(0.62, abs=0.01)
    assert result.is_established


@pytest.mark.parametrize(
    "cell, reference",
    [
        ([1.0, 4.0, 9.0], [2.0, 7.0]),  # odd and even, one block of three and one of two
        ([1.0, 3.0, 3.0, 8.0], [2.0, 5.0, 6.0, 13.0, 21.0]),  # ties; blocks of three
        ([4.0, 1.0], [9.0, 2.0, 6.0, 7.0, 3.0, 8.0, 5.0, 10.0, 11.0, 12.0]),
        # 12 870 splits, two even groups: both middle positions of each drawn (median_law)
        ([1.0, 3, 5, 7, 9, 11, 13, 15], [2.0, 4, 6, 8, 10, 12, 14, 16]),
        # odd and odd: drawn from the medians' exact distribution (median_law), ties included
        ([1.0, 4.0, 9.0], [2.0, 7.0, 3.0, 3.0, 5.0]),
        ([6.0, 1, 8, 3, 3, 12, 2], [5.0, 9, 3, 11, 4, 10, 7, 13, 14]),  # 11 440 splits
    ],
)
def test_shuffled_medians_follow_the_law_of_every_shuffle(cell, reference):
    """The shuffled medians against the exact distribution: every way of reassigning the runs to the
    two cells enumerated, each cell keeping its number of runs (listed splits drawn from, or
    runs shuffled, by the task's size)."""
    import itertools
    from collections import Counter

    runs = cell + reference
    deals = list(itertools.combinations(range(len(runs)), len(cell)))
    exact = Counter()
    for chosen in deals:
        mine = [runs[i] for i in chosen]
        theirs = [runs[i] for i in range(len(runs)) if i not in chosen]
        exact[float(np.median(mine) - np.median(theirs))] += 1 / len(deals)
    rng = np.random.default_rng(3)
    dealt = resampling.dealt_median_gaps([cell], [reference], rng, 40_000, lambda v: v)
    # The observed split first, by the same arithmetic as the shuffles.
    assert dealt[0] == np.median(cell) - np.median(reference)
    drawn = dealt[1:]
    found = Counter(drawn.tolist())
    assert set(found) <= set(exact)
    for value, share in exact.items():
        assert found[value] / drawn.size == pytest.approx(share, abs=0.01)


def test_shuffled_rates_follow_the_law_of_shuffling_by_index():
    """The hypergeometric shortcut against dealing the runs out by index."""
    cell, reference = [[True, True, False]], [[False, False, True, False]]
    rng = np.random.default_rng(5)
    runs = np.array(cell[0] + reference[0], dtype=float)
    by_index = []
    for _ in range(20_000):
        dealt = rng.permutation(runs)
        by_index.append(resampling.pooled_rate_gap([dealt[:3]], [dealt[3:]]))
    by_index = np.array([gap / error for gap, error in by_index])
    dealt = resampling.dealt_rate_ratios(cell, reference, np.random.default_rng(6), 20_000)
    gap, error = resampling.pooled_rate_gap(cell, reference)
    assert dealt[0] == pytest.approx(gap / error)  # the observed split first
    drawn = dealt[1:]
    for value in np.unique(by_index):
        share = np.mean(np.isclose(drawn, value))
        assert share == pytest.approx(np.mean(np.isclose(by_index, value)), abs=0.015)


def test_a_median_deal_that_ties_the_observed_one_counts_as_reaching_it():
    """Medians of many equal values: a seventh of the splits of the middle task tie the
    observed medians (3 against 2), and the other two tasks tie in every split. p against every
    split enumerated, a tie counted on the far side (computed apart from the splits, the observed
    log gap rounded differently and put the ties on the near side)."""
    import itertools

    from agentab.stats import strata

    cell = [[5.0] * 4, [2.0, 3, 3, 3], [7.0] * 4]
    reference = [[5.0] * 4, [1.0, 1, 3, 3], [7.0] * 4]
    runs = cell[1] + reference[1]
    middle = []
    for chosen in itertools.combinations(range(8), 4):
        ours = [runs[i] for i in chosen]
        others = [runs[i] for i in range(8) if i not in chosen]
        middle.append(np.log(np.median(ours)) - np.log(np.median(others)))
    observed = np.log(3.0) - np.log(2.0)
    exact_p = 2 * np.mean(np.array(middle) >= observed - 1e-12)  # 2 x 15/70
    verdict = strata.pooled_gap_verdict(MEDIAN, strata.LOG, cell, reference, "ties")
    assert verdict.p == pytest.approx(exact_p, abs=0.02)


@pytest.mark.parametrize(
    "ours, others", [(1, 1), (1, 5), (3, 3), (5, 3), (5, 7), (9, 1), (2, 2), (4, 5), (6, 3)]
)
def test_the_medians_exact_law_is_the_law_of_every_deal(ours, others):
    """median_law's table of the two (lower) medians' positions against every split of the
    sorted positions, probability by probability (not a sample of it)."""
    import itertools
    from collections import Counter

    from agentab.stats import median_law

    size = ours + others
    deals = list(itertools.combinations(range(size), ours))
    exact = Counter()
    for chosen in deals:
        theirs = [i for i in range(size) if i not in chosen]
        exact[chosen[(ours - 1) // 2], theirs[(others - 1) // 2]] += 1 / len(deals)
    mine, theirs, probability = median_law.joint_median_law(ours, others)
    pairs = zip(mine.tolist(), theirs.tolist(), strict=True)
    law = dict(zip(pairs, probability, strict=True))
    assert set(law) == set(exact)
    for pair, share in exact.items():
        assert law[pair] == pytest.approx(share, abs=1e-12)


@pytest.mark.parametrize("ours, others", [(67, 67), (66, 67), (66, 66)])
def test_the_medians_law_is_drawn_the_same_with_the_same_seed(ours, others):
    from agentab.stats import median_law

    first = median_law.draw_median_positions(ours, others, np.random.default_rng(9), 1_000)
    again = median_law.draw_median_positions(ours, others, np.random.default_rng(9), 1_000)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))


def test_the_medians_law_covers_tasks_up_to_a_size_and_the_rest_are_shuffled():
    from agentab.stats import median_law

    assert median_law.covers(3, 5) and median_law.covers(4, 5) and median_law.covers(1, 1)
    assert not median_law.covers(501, 501) and not median_law.covers(0, 5)
    with pytest.raises(ValueError):
        median_law.joint_median_law(501, 501)


@pytest.mark.parametrize("ours, others", [(2, 2), (2, 3), (3, 2), (4, 5), (6, 2), (4, 7), (6, 6)])
def test_the_four_middle_positions_follow_the_law_of_every_deal(ours, others):
    """Even groups: both middle positions of each cell against every split (a sample of 200 000
    draws; every combination found is one some split gives, each at its share)."""
    import itertools
    from collections import Counter

    from agentab.stats import median_law

    size = ours + others
    deals = list(itertools.combinations(range(size), ours))
    exact = Counter()
    for chosen in deals:
        theirs = [i for i in range(size) if i not in chosen]
        middle = (chosen[(ours - 1) // 2], chosen[ours // 2])
        exact[middle + (theirs[(others - 1) // 2], theirs[others // 2])] += 1 / len(deals)
    drawn = median_law.draw_median_positions(ours, others, np.random.default_rng(2), 200_000)
    found = Counter(zip(*(positions.tolist() for positions in drawn), strict=True))
    assert set(found) <= set(exact)
    for combination, share in exact.items():
        assert found[combination] / 200_000 == pytest.approx(share, abs=0.004)


def _law_of(table) -> dict:
    """The exact distribution an alias table draws from: each slot's 1/size kept or given to its
    alias."""
    law: dict = {}
    share = 1 / table.keep.size
    for slot in range(table.keep.size):
        kept, given = table.values[slot], table.values[table.alias[slot]]
        law[int(kept)] = law.get(int(kept), 0.0) + share * table.keep[slot]
        law[int(given)] = law.get(int(given), 0.0) + share * (1 - table.keep[slot])
    return {value: p for value, p in law.items() if p > 0}


@pytest.mark.parametrize("trials, successes", [(1, 0), (1, 1), (7, 3), (67, 1), (67, 40)])
def test_an_alias_table_draws_the_binomial_exactly(trials, successes):
    from scipy.stats import binom

    from agentab.stats import discrete_laws

    law = _law_of(discrete_laws.binomial(trials, successes))
    for count, p in law.items():
        assert p == pytest.approx(binom.pmf(count, trials, successes / trials), abs=1e-12)
    assert sum(law.values()) == pytest.approx(1, abs=1e-12)


@pytest.mark.parametrize("good, bad, sample", [(3, 4, 3), (50, 84, 67), (0, 9, 4), (9, 0, 4)])
def test_an_alias_table_draws_the_hypergeometric_exactly(good, bad, sample):
    from scipy.stats import hypergeom

    from agentab.stats import discrete_laws

    law = _law_of(discrete_laws.hypergeometric(good, bad, sample))
    for count, p in law.items():
        assert p == pytest.approx(hypergeom.pmf(count, good + bad, good, sample), abs=1e-12)
    assert sum(law.values()) == pytest.approx(1, abs=1e-12)
    drawn = discrete_laws.hypergeometric(good, bad, sample).draw(np.random.default_rng(1), 500)
    again = discrete_laws.hypergeometric(good, bad, sample).draw(np.random.default_rng(1), 500)
    assert np.array_equal(drawn, again)  # the same seed, the same draws


def test_the_largest_uniform_scaled_by_a_tables_size_stays_below_it():
    """A draw reads slot floor(u * size) with no clamp: u < 1 times size rounds below size."""
    largest = np.nextafter(1.0, 0.0)
    many = np.random.default_rng(3).integers(200_000, 2**40, size=100_000)
    sizes = np.concatenate((np.arange(1, 200_000), many)).astype(float)
    assert np.all((largest * sizes).astype(np.intp) < sizes)


@pytest.mark.parametrize("trials", [1, 2, 7, 67, 334])
def test_an_alias_tables_draws_are_the_slot_and_fraction_rule_to_the_last_draw(trials):
    """The draw compares the scaled uniform with a threshold per slot instead of its fraction
    with keep[slot]: the same rule, so every draw is the one the rule gives, including uniforms
    at the very edges of a slot."""
    from agentab.stats import discrete_laws

    for successes in sorted({0, 1, trials // 3, trials // 2, trials - 1, trials}):
        table = discrete_laws.binomial(trials, successes)
        size = table.keep.size
        uniforms = np.random.default_rng(trials + successes).random(20_000)
        edges = (np.arange(size) + table.keep) / size  # where a slot turns to its alias
        uniforms[: 3 * size] = np.concatenate(
            (edges, np.nextafter(edges, 0), np.nextafter(edges, 1))
        )
        uniforms = np.clip(uniforms, 0, np.nextafter(1, 0))
        scaled = uniforms * size
        slot = np.minimum(scaled.astype(np.intp), size - 1)  # the rule as first written
        kept = (scaled - slot) < table.keep[slot]
        expected = table.values[np.where(kept, slot, table.alias[slot])]

        assert np.array_equal(table.draw(_Replay(uniforms), uniforms.size), expected)
        # A resample's rate: the drawn counts divided, to the last bit.
        rates = discrete_laws.binomial_rate(trials, successes).draw(_Replay(uniforms), 20_000)
        assert rates.dtype == np.float64
        assert np.array_equal(rates, expected / trials)


@pytest.mark.parametrize(
    "good, bad, sample", [(3, 4, 3), (50, 84, 67), (0, 9, 4), (9, 0, 4), (1500, 1500, 1500)]
)
def test_a_shuffles_place_among_the_counts_is_its_count_less_the_first(good, bad, sample):
    """The pooled rate's shuffles read each count's place (from 1) among the distribution's counts:
    the same draws as the counts less the first count, less one, even where the tails' chances
    round to 0 (1 500 of 3 000)."""
    from agentab.stats import discrete_laws

    counts = discrete_laws.hypergeometric(good, bad, sample)
    places = discrete_laws.hypergeometric_places(good, bad, sample)
    assert np.array_equal(np.diff(counts.values), np.ones(counts.values.size - 1))
    for seed in range(3):
        expected = counts.draw(np.random.default_rng(seed), 5_000) - (counts.values[0] - 1)
        assert np.array_equal(places.draw(np.random.default_rng(seed), 5_000), expected)


class _Replay:
    """A generator whose uniforms are given."""

    def __init__(self, uniforms):
        self.uniforms = uniforms

    def random(self, draws):
        return self.uniforms[:draws].copy()


@pytest.mark.parametrize("size", [1, 3, 5, 7])
def test_an_alias_table_draws_a_resampled_median_position_exactly(size):
    """The middle order statistic of `size` draws with replacement among `size` positions,
    against every one of the size**size resamples."""
    import itertools
    from collections import Counter

    from agentab.stats import discrete_laws

    middle = (size + 1) // 2
    every = Counter(
        sorted(drawn)[middle - 1] for drawn in itertools.product(range(size), repeat=size)
    )
    law = _law_of(discrete_laws.order_statistic(size, middle))
    assert set(law) == set(every)
    for position, count in every.items():
        assert law[position] == pytest.approx(count / size**size, abs=1e-12)
