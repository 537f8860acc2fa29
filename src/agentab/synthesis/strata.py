"""Tasks as strata: a cell's pooled statistic, and the stratified bootstrap of a gap.

A scenario with several `[tasks.<name>]` runs every cell on every task. Tasks differ in how
hard they are, so pooling their runs into one group would let a cell whose runs happen to fall
more on the easy task look better. Each task is a stratum instead:

- a cell's statistic is the equal-weight mean over tasks of the per-task statistic (the rate,
  or the median, of the cell's valid runs of that task);
- a gap is the difference of those means, and the bootstrap resamples each (cell, task) group
  on its own, at its own size, with its own random stream: a draw of the pooled statistic is
  the mean of the tasks' draws;
- a pooled value (and a pooled gap) needs every task: a task without a valid value leaves it
  undefined rather than silently reweighting the others.

With one task, all of this is the plain statistic and the plain bootstrap, with the same
random streams as before tasks existed: a one-task results folder rebuilds to the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentab.metrics import RATE, Aggregate, aggregate
from agentab.synthesis import stats

ALL = "all"  # the task of a pooled row in cells.csv and gaps.csv


def stratum_key(metric: str, cell: str, task: str) -> str:
    """The random stream's key of one (cell, task) group; without a task, the key groups had
    before tasks existed (so their draws are unchanged)."""
    key = stats.group_key(metric, cell)
    return f"{key}\x1f{task}" if task else key


def pooled_statistic(kind: str, per_task: Sequence[Sequence[float]]) -> float:
    """The equal-weight mean over tasks of each task's statistic; every task needs values."""
    return float(np.mean([stats.statistic(kind, values) for values in per_task]))


# A few booleans per task: a group all true (or all false) has no spread at all in a
# percentile bootstrap, and a pooled interval over such groups comes out too narrow (simulated:
# 7-17% of null gaps established with 2 to 5 runs per task). With several tasks, each group's
# rate is resampled at (k + 1/2) / (n + 1) instead of k / n: half a success and half a failure
# added, Jeffreys' prior. `benchmarks/sim_tasks.py` shows the pooled verdict then stays at or
# under 5% false positives; a one-task scenario keeps the plain bootstrap and its draws.
SMOOTHING = 0.5


def resample_group(
    kind: str, values: Sequence[float], metric: str, cell: str, task: str
) -> np.ndarray:
    """The statistic of `stats.DRAWS` resamples of one (cell, task) group, on its own stream;
    `task` is "" in a one-task scenario."""
    rng = stats.generator_for(stratum_key(metric, cell, task))
    if task and kind == RATE:
        return smoothed_rate_draws(values, rng)
    return stats.resample_statistic(kind, values, rng)


def smoothed_rate_draws(values: Sequence, rng: np.random.Generator) -> np.ndarray:
    """Resampled rates of one task's group, at its rate smoothed by SMOOTHING (above)."""
    n = len(values)
    if n == 0:
        raise ValueError("cannot resample an empty group")
    successes = sum(1 for value in values if value)
    rate = (successes + SMOOTHING) / (n + 2 * SMOOTHING)
    return rng.binomial(n, rate, size=stats.DRAWS) / n


def pooled_draws(task_draws: Sequence[np.ndarray]) -> np.ndarray:
    """Draws of the pooled statistic from each task's draws: their equal-weight mean. One task
    gives its own draws back, untouched."""
    if len(task_draws) == 1:
        return task_draws[0]
    return np.mean(np.vstack(task_draws), axis=0)


def pooled_aggregate(kind: str, per_task: Sequence[Sequence]) -> tuple[Aggregate, str]:
    """A cell's pooled value of a metric over several tasks, and a note for the reader.

    n (and k for a rate) count every valid run of every task; the value is the equal-weight
    mean of the per-task statistics, so it has no Wilson interval or IQR of its own: the
    per-task rows carry the dispersion, and a gap's interval comes from the bootstrap.
    """
    n = sum(len(values) for values in per_task)
    k = sum(1 for values in per_task for value in values if value is True) if kind == RATE else None
    lacking = sum(1 for values in per_task if not values)
    if lacking:
        note = (
            f"no pooled value: {lacking} of {len(per_task)} tasks have no valid value, and a "
            "pooled value needs every task"
        )
        return Aggregate(kind, n, k=k), note
    values = [aggregate(kind, list(group)).value for group in per_task]
    mean = float(np.mean(values))
    return Aggregate(kind, n, value=mean, k=k), f"equal-weight mean over {len(per_task)} tasks"
