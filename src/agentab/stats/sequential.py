"""The sequential rule: a gap judged after every wave by an anytime-valid 95% confidence sequence.

A fixed-n interval is valid once, at the number of runs planned. Looked at after every wave and
stopped at the first "established", it calls about 12% of null gaps established. A confidence
sequence holds at every wave at once: the chance that it ever excludes the true value, however
many waves are looked at, is at most 5% (Ville's inequality). So a gap is decided at the first
wave whose sequence excludes 0, and stays decided; otherwise it is inconclusive. Two states.

**What is judged.** A cell's run i is paired with the reference's run i of the same task (the
same run index: the order the runs were planned in, never the order they finished in). A pair
gives one value d in [-1, 1]:

- a rate: d = cell's outcome - reference's outcome (1, 0 or -1). The sequence is for the mean
  of d, the difference of the two rates;
- a median: d = the sign of cell's value - reference's value (ties give 0). The sequence is for
  P(cell > reference) - P(cell < reference): 0 when the two do not differ, and of the sign of
  the median gap under a shift. Signs need no scale, so a task 100 times the others is one
  task like the others, counts with many ties keep the 5%, and no distribution is assumed.

With several tasks, the pairs of every task form one stream, wave by wave and task by task.
When the cells do not differ, each pair's d has mean 0 in its own task, whatever the task's
level, which is all the bet below needs: the 5% holds over tasks of any difficulty.

**The bet.** Waudby-Smith and Ramdas's hedged capital process (Estimating means of bounded
random variables by betting, JRSS B 2024), for z = (d + 1) / 2 in [0, 1] and a candidate mean
m: two gamblers bet that the mean is above m and below m, each with a stake fixed before the
pair is seen (the predictable plug-in stake, from the earlier pairs' spread and the planned
maximum), and m leaves the sequence once their average capital reaches 1 / 0.05 = 20. Under the
true m the capital is a nonnegative martingale of mean 1, so it reaches 20 with probability at
most 5%, at any wave. The anytime-valid p-value is 1 / the largest capital reached at m = 0.

Decisions follow from the runs and their run indices alone, so a synthesis rebuilt from
measures.json gives every wave's decision again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agentab.metrics import MEDIAN, RATE

ALPHA = 0.05
# Largest share of its capital a gambler stakes on one pair: below 1, so that no single pair
# can ruin it. 3/4 gave the most power at the 5% in benchmarks/sim_sequential.py (1/2: less).
MAX_STAKE = 0.75
# Candidate means on [-1, 1] at which the sequence is computed; odd, so that 0 is one of them.
GRID = np.linspace(-1.0, 1.0, 401)
THRESHOLD = 1 / ALPHA


@dataclass(frozen=True)
class Look:
    """The sequence after one wave: the pairs so far, its running interval, and the state."""

    wave: int
    pairs: int
    low: float
    high: float
    p: float  # anytime-valid: 1 / the largest capital at 0 reached so far, capped at 1
    established: bool


@dataclass(frozen=True)
class SequencePath:
    """A gap's sequence over its waves, and the wave that decided it (None: undecided)."""

    kind: str
    looks: tuple[Look, ...]

    @property
    def decided_at(self) -> int | None:
        return next((look.wave for look in self.looks if look.established), None)

    @property
    def last(self) -> Look | None:
        return self.looks[-1] if self.looks else None

    @property
    def established(self) -> bool:
        return self.decided_at is not None


def pair_values(kind: str, cell: Sequence[float], reference: Sequence[float]) -> np.ndarray:
    """d of each pair, in order: the difference of two outcomes (rate) or the sign of the
    difference of two values (median)."""
    mine = np.asarray(cell, dtype=float)
    theirs = np.asarray(reference, dtype=float)
    if kind == RATE:
        return mine - theirs
    if kind == MEDIAN:
        return np.sign(mine - theirs)
    raise ValueError(f"no sequential rule for {kind!r}")


def stakes(z: np.ndarray, horizon: int) -> np.ndarray:
    """The predictable plug-in stake before each pair, from the pairs before it only.

    Sized for the planned maximum of pairs (`horizon`): Waudby-Smith and Ramdas's fixed-time
    choice, sqrt(2 log(2/alpha) / (variance x n)), with the variance estimated from the earlier
    pairs (and a prior of 1/4 worth one pair). Stakes are cut to MAX_STAKE by the caller.
    """
    z = np.asarray(z, dtype=float)
    count = z.shape[-1]
    seen = np.arange(1, count + 1)
    means = (0.5 + np.cumsum(z, axis=-1)) / (seen + 1)
    variances = (0.25 + np.cumsum((z - means) ** 2, axis=-1)) / (seen + 1)
    before = np.concatenate([np.full(z.shape[:-1] + (1,), 0.25), variances[..., :-1]], axis=-1)
    return np.sqrt(2 * math.log(2 / ALPHA) / (before * max(horizon, 1)))


def log_capital(d: np.ndarray, m: np.ndarray | float, horizon: int) -> np.ndarray:
    """log of the hedged capital at candidate mean m after each pair: shape (..., pairs), with
    m broadcast on the leading axes (a grid of candidates, or many simulated experiments)."""
    z = (np.asarray(d, dtype=float) + 1) / 2
    centre = (np.asarray(m, dtype=float) + 1) / 2
    centre = np.clip(centre, 1e-9, 1 - 1e-9)[..., None]
    raw = stakes(z, horizon)
    up = np.minimum(raw, MAX_STAKE / centre)
    down = np.minimum(raw, MAX_STAKE / (1 - centre))
    gain_up = np.cumsum(np.log1p(up * (z - centre)), axis=-1)
    gain_down = np.cumsum(np.log1p(-down * (z - centre)), axis=-1)
    return np.logaddexp(gain_up, gain_down) + math.log(0.5)


def crossings(d: np.ndarray, ends: Sequence[int], horizon: int) -> np.ndarray:
    """Whether 0 has left the sequence by each look (pairs so far in `ends`): shape (..., looks).
    `d` may hold many experiments on its leading axes (the simulation's fast path)."""
    if d.shape[-1] == 0:
        return np.zeros(d.shape[:-1] + (len(ends),), dtype=bool)
    capital = np.maximum.accumulate(log_capital(d, 0.0, horizon), axis=-1)
    at = np.clip(np.asarray(ends, dtype=int) - 1, -1, d.shape[-1] - 1)
    reached = np.where(at >= 0, np.take(capital, np.maximum(at, 0), axis=-1), -np.inf)
    return reached >= math.log(THRESHOLD)


def sequence_path(kind: str, d: Sequence[float], ends: Sequence[int], horizon: int) -> SequencePath:
    """A gap's looks, one per wave: `ends[k]` is the number of pairs through wave k + 1.

    The interval at a look is the running intersection of every look's set so far (a sequence
    may be intersected over time and stay valid), so it only narrows.
    """
    values = np.asarray(d, dtype=float)
    looks = []
    low, high = -1.0, 1.0
    if values.size:
        # The largest capital each candidate has reached so far: a candidate that ever reached
        # 20 has left the sequence for good (the running intersection over every pair).
        reached = np.maximum.accumulate(log_capital(values, GRID, horizon), axis=-1)
    zero = GRID.size // 2
    for wave, end in enumerate(ends, start=1):
        best = float(reached[zero, end - 1]) if end > 0 else 0.0
        if end > 0:
            kept = GRID[reached[:, end - 1] < math.log(THRESHOLD)]
            if kept.size:
                low, high = float(kept.min()), float(kept.max())
        established = best >= math.log(THRESHOLD)
        p = min(1.0, math.exp(-max(best, 0.0)))
        looks.append(Look(wave, int(end), low, high, p, established))
        if established:  # decided: the waves after it add nothing to this gap's verdict
            break
    return SequencePath(kind, tuple(looks))


def fewest_pairs(horizon: int) -> int | None:
    """The fewest pairs after which a gap can be established at all (every pair at +1), for a
    planned maximum of `horizon` pairs; None when even the maximum cannot."""
    capital = log_capital(np.ones(horizon), 0.0, horizon)
    reached = np.flatnonzero(capital >= math.log(THRESHOLD))
    return int(reached[0]) + 1 if reached.size else None
