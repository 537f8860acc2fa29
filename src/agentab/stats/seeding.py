"""The random streams of a synthesis: one per key, seeded from the fixed seed and the key alone.

A stream is numpy's PCG64 seeded by SeedSequence([seed, four words of the key's sha256]), as
`generator_for` makes it one at a time. A synthesis makes 3 000 of them, and seeding one costs
15 to 30 µs, almost all of it the calls around SeedSequence's few dozen 32-bit operations.
`Streams` seeds a job's keys together: SeedSequence's mixing (numpy's bit_generator.pyx,
O'Neill's seed_seq_fe) is here as array arithmetic over all the keys at once, and each PCG64
takes its ready state through numpy's own interface for a seed sequence. The streams are the
ones `generator_for` gives, word for word (tests/unit/test_seeding.py compares them with
numpy's SeedSequence over thousands of keys and seeds).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
import numpy.random  # here, not in each process a synthesis forks: 15 ms a process
from numpy.random.bit_generator import ISeedSequence

SEED = 20_250_101

# SeedSequence's constants (the hash multipliers of its pool and its output, the mix's).
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_LEFT, _MIX_RIGHT = 0xCA01F9DD, 0x4973F715
_POOL = 4
_SHIFT = np.uint32(16)
_MASK = 0xFFFFFFFF


def generator_for(key: str, seed: int = SEED) -> np.random.Generator:
    """A random stream that depends on the fixed seed and the key alone."""
    if 0 <= seed < 2**32:
        # The entropy [seed, word, word, word, word] as the uint32 array SeedSequence makes of
        # that list (one word per int below 2**32), given ready: the same stream, a third
        # less time to seed.
        return np.random.default_rng(np.random.SeedSequence(_entropy([key], seed)[0]))
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence([seed, *words]))


class Streams:
    """The streams of some keys, seeded together; `streams(key)` is `generator_for(key)`.

    Each stream is handed out once (a Generator moves on as it draws): a key asked for again,
    or one not given at the start, gets a stream of its own seeded then.
    """

    def __init__(self, keys: Iterable[str], seed: int = SEED):
        self.seed = seed
        keys = list(dict.fromkeys(keys))
        self._ready: dict[str, np.random.Generator] = {}
        if keys and 0 <= seed < 2**32:
            states = seed_states(_entropy(keys, seed))
            self._ready = {
                key: np.random.Generator(np.random.PCG64(_SeededState(state)))
                for key, state in zip(keys, states, strict=True)
            }

    def __call__(self, key: str) -> np.random.Generator:
        found = self._ready.pop(key, None)
        return generator_for(key, self.seed) if found is None else found


def _entropy(keys: list[str], seed: int) -> np.ndarray:
    """Each key's row [seed, its digest's first four little-endian 32-bit words]."""
    digests = b"".join(hashlib.sha256(key.encode("utf-8")).digest()[:16] for key in keys)
    entropy = np.empty((len(keys), 5), dtype=np.uint32)
    entropy[:, 0] = seed
    entropy[:, 1:] = np.frombuffer(digests, dtype="<u4").reshape(len(keys), 4)
    return entropy


def seed_states(entropy: np.ndarray) -> np.ndarray:
    """SeedSequence(row).generate_state(4, np.uint64) of each row of uint32 words: the pool of
    four words hashed in, mixed with each other, the words beyond the pool mixed into each,
    then eight output words hashed from the pool, read as four little-endian 64-bit ones."""
    entropy = np.asarray(entropy, dtype=np.uint32)
    rows, width = entropy.shape
    hashed = _Hash(_INIT_A, _MULT_A)
    pool = [hashed(entropy[:, i] if i < width else np.zeros(rows, np.uint32)) for i in range(_POOL)]
    for source in range(_POOL):
        for target in range(_POOL):
            if source != target:
                pool[target] = _mix(pool[target], hashed(pool[source]))
    for source in range(_POOL, width):
        for target in range(_POOL):
            pool[target] = _mix(pool[target], hashed(entropy[:, source]))
    output = _Hash(_INIT_B, _MULT_B)
    words = np.empty((rows, 2 * _POOL), dtype="<u4")
    for index in range(2 * _POOL):
        words[:, index] = output(pool[index % _POOL])
    return words.view("<u8").astype(np.uint64)


class _Hash:
    """SeedSequence's hashmix: its multiplier moves on at every word it hashes, the same for
    every row, so it is a Python int beside the rows' arrays."""

    def __init__(self, start: int, multiplier: int):
        self.constant, self.multiplier = start, multiplier

    def __call__(self, words: np.ndarray) -> np.ndarray:
        words = words ^ np.uint32(self.constant)
        self.constant = (self.constant * self.multiplier) & _MASK
        words = words * np.uint32(self.constant)
        return words ^ (words >> _SHIFT)


def _mix(into: np.ndarray, words: np.ndarray) -> np.ndarray:
    mixed = np.uint32(_MIX_LEFT) * into - np.uint32(_MIX_RIGHT) * words
    return mixed ^ (mixed >> _SHIFT)


class _SeededState(ISeedSequence):
    """A seed sequence whose state is already known: what PCG64 asks of a SeedSequence (four
    64-bit words), and nothing else (no spawning)."""

    def __init__(self, state: np.ndarray):
        self.state = np.ascontiguousarray(state, dtype=np.uint64)

    def generate_state(self, n_words, dtype=np.uint32):
        if n_words != self.state.size or np.dtype(dtype) != np.uint64:
            raise ValueError("a ready seed state gives PCG64's four 64-bit words only")
        return self.state
