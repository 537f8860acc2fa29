"""Streams seeded together are the streams generator_for seeds one at a time, word for word.

Every verdict of a synthesis is read from these streams, and the recorded outputs of the demo
and the benchmarks rest on them: SeedSequence's mixing done here as array arithmetic must give
numpy's own state for any entropy, and a stream handed out twice must not continue where the
first left off.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentab.stats import seeding


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9), st.integers(1, 300), st.integers(0, 2**32 - 1))
def test_the_mixing_gives_numpys_state_for_any_entropy(width, rows, start):
    entropy = np.random.default_rng(start).integers(0, 2**32, size=(rows, width), dtype=np.uint64)
    entropy = entropy.astype(np.uint32)
    entropy[0] = 0  # words of 0 and of 2**32 - 1 too
    entropy[-1] = 2**32 - 1
    expected = np.array(
        [np.random.SeedSequence(row).generate_state(4, np.uint64) for row in entropy]
    )
    assert np.array_equal(seeding.seed_states(entropy), expected)


def state(generator: np.random.Generator) -> dict:
    return generator.bit_generator.state


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=1, max_size=40))
def test_each_stream_of_a_batch_is_the_keys_own(keys):
    streams = seeding.Streams(keys)
    for key in keys:  # a key given twice: its second ask is a stream of its own, from the start
        found, expected = streams(key), seeding.generator_for(key)
        assert state(found) == state(expected)
        assert np.array_equal(found.random(16), expected.random(16))


def test_a_key_not_given_at_the_start_and_a_seed_beyond_32_bits_still_get_their_stream():
    assert state(seeding.Streams(["a"])("b")) == state(seeding.generator_for("b"))
    for seed in (2**32, 2**70):
        found = seeding.Streams(["a", "b"], seed)("a")
        assert state(found) == state(seeding.generator_for("a", seed))
        assert state(found) != state(seeding.generator_for("a"))


def test_the_streams_of_a_synthesis_are_the_ones_its_verdicts_were_recorded_with():
    """The keys a gap verdict draws from, as the synthesis names them (metric, cell, task)."""
    keys = [
        f"passes_{m}\x1fa{c} · b{c % 5}\x1f{task}"
        for m in range(5)
        for c in range(30)
        for task in ("", "t3")
    ]
    streams = seeding.Streams(keys)
    for key in keys:
        assert np.array_equal(streams(key).random(4), seeding.generator_for(key).random(4))


def test_a_ready_state_serves_pcg64_alone():
    ready = seeding._SeededState(np.arange(4, dtype=np.uint64))
    with pytest.raises(ValueError, match="PCG64's four 64-bit words"):
        ready.generate_state(8, np.uint32)
