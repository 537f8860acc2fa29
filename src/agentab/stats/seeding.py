"""The random streams of a synthesis: one per key, seeded from the fixed seed and the key alone.

Each gap, group and figure draws from a stream named after what it resamples, so adding a cell
or a metric moves no other draw, and neither does the order the gaps are computed in.
"""

from __future__ import annotations

import hashlib

import numpy as np

SEED = 20_250_101


def generator_for(key: str, seed: int = SEED) -> np.random.Generator:
    """A random stream that depends on the fixed seed and the key alone: numpy's PCG64 seeded by
    SeedSequence([seed, the first four little-endian 32-bit words of the key's sha256])."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence([seed, *words]))
