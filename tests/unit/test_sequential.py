"""The sequential rule's confidence sequence: pairs, decisions, and the 5% under many looks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentab.metrics import MEDIAN, RATE
from agentab.stats import sequential


def test_a_rate_pair_is_the_difference_and_a_median_pair_the_sign() -> None:
    assert sequential.pair_values(RATE, [1, 0, 1], [0, 0, 1]).tolist() == [1, 0, 0]
    assert sequential.pair_values(MEDIAN, [5.0, 2.0, 3.0], [3.0, 9.0, 3.0]).tolist() == [1, -1, 0]


def test_a_steady_gap_is_decided_at_a_wave_and_stays_decided() -> None:
    d = [1.0] * 15
    path = sequential.sequence_path(RATE, d, [5, 10, 15], horizon=30)
    assert path.established
    assert path.decided_at == path.looks[-1].wave  # the looks stop at the decision
    assert path.last.low > 0 and path.last.p <= 0.05


def test_no_difference_is_never_decided_and_its_sequence_holds_zero() -> None:
    d = [1.0, -1.0, 0.0] * 10
    path = sequential.sequence_path(RATE, d, [6, 12, 18, 24, 30], horizon=30)
    assert not path.established
    assert len(path.looks) == 5
    assert all(look.low <= 0 <= look.high for look in path.looks)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([-1.0, 0.0, 1.0]), min_size=1, max_size=40))
def test_the_sequence_only_narrows_and_agrees_with_the_fast_path(d: list[float]) -> None:
    ends = list(range(5, len(d) + 5, 5))
    ends = [min(end, len(d)) for end in ends]
    path = sequential.sequence_path(RATE, d, ends, horizon=40)
    for before, after in zip(path.looks, path.looks[1:], strict=False):
        assert after.low >= before.low and after.high <= before.high
    fast = sequential.crossings(np.asarray([d]), ends, horizon=40)[0]
    assert path.established == bool(fast.any())
    assert all(look.established == bool(fast[look.wave - 1]) for look in path.looks)


@pytest.mark.parametrize("rate", [0.05, 0.5, 0.95])
def test_under_the_null_a_look_after_every_wave_keeps_the_five_percent(rate: float) -> None:
    """4000 null experiments of 30 pairs, a look every 5: the share ever established stays
    under 5% by more than its Monte-Carlo error (the rule is conservative; ~3% at 50%)."""
    rng = np.random.default_rng(7)
    cell, reference = rng.random((2, 4000, 30)) < rate
    d = sequential.pair_values(RATE, cell, reference)
    crossed = sequential.crossings(d, [5, 10, 15, 20, 25, 30], horizon=30)
    assert crossed.any(axis=-1).mean() < 0.05


def test_the_fewest_pairs_that_can_decide_agree_with_the_rule() -> None:
    assert sequential.fewest_pairs(5) is None  # not even five pairs that all differ
    fewest = sequential.fewest_pairs(30)
    ones = np.ones((1, 30))
    assert not sequential.crossings(ones, [fewest - 1], horizon=30)[0, 0]
    assert sequential.crossings(ones, [fewest], horizon=30)[0, 0]
