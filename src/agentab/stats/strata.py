"""Tasks as strata: a cell's pooled statistic, and the verdict on a pooled gap.

A scenario with several `[tasks.<name>]` runs every cell on every task. Tasks differ in how
hard they are, so pooling their runs into one group would let a cell whose runs happen to fall
more on the easy task look better. Each task is a stratum instead:

- a cell's statistic is the equal-weight mean over tasks of the per-task statistic: the rate,
  or the median. A median is pooled on the log scale when every value of the metric is
  positive (turns, tokens, seconds, dollars): the pooled value is then the geometric mean of the
  tasks' medians, and a task 100 times the others weighs as much as each of them, no more. A
  metric with a zero or a negative value is pooled as it is (the mean of the tasks' medians);
- a gap is the difference of those pooled values, and its draws come from shuffling each task's
  runs between the two cells (`resampling`, the stratified permutation), which keeps the 5% at
  any number of runs, rate or scale;
- a pooled value (and a pooled gap) needs every task: a task without a valid value leaves it
  undefined rather than silently reweighting the others.

With one task, named or not, none of this applies: the plain statistic and the bootstrap of
each group, with the random streams groups had before tasks existed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from agentab import stats
from agentab.metrics import MEDIAN, RATE, Aggregate, aggregate
from agentab.stats import resampling

ALL = "all"  # the task of a pooled row in cells.csv and gaps.csv
LINEAR = "linear"
LOG = "log"  # a median pooled as the geometric mean of the tasks' medians
RATE_GAP_BOUNDS = (-1.0, 1.0)


def stratum_key(metric: str, cell: str, task: str) -> str:
    """The random stream's key of one (cell, task) group; without a task, the key groups had
    before tasks existed (so their draws are unchanged)."""
    key = resampling.group_key(metric, cell)
    return f"{key}\x1f{task}" if task else key


def pooled_gap_key(metric: str, cell: str, reference: str) -> str:
    """The random stream's key of the shuffles of a pooled gap: one per pair of cells."""
    return f"{metric}\x1f{cell}\x1f{reference}\x1fshuffled"


def scale_of(kind: str, values: Sequence) -> str:
    """LOG for a metric of medians whose every valid value is positive, else LINEAR."""
    if kind == MEDIAN and values and all(value > 0 for value in values):
        return LOG
    return LINEAR


def pooled_statistic(kind: str, per_task: Sequence[Sequence[float]], scale: str = LINEAR) -> float:
    """The equal-weight mean over tasks of each task's statistic (on the log scale, the
    geometric mean); every task needs values."""
    each = np.array([resampling.statistic(kind, values) for values in per_task], dtype=float)
    return float(np.exp(np.mean(np.log(each)))) if scale == LOG else float(np.mean(each))


def pooled_aggregate(
    kind: str,
    per_task: Sequence[Sequence],
    scale: str = LINEAR,
    task_aggregates: Sequence[Aggregate] | None = None,
) -> tuple[Aggregate, str]:
    """A cell's pooled value of a metric over several tasks, and a note for the reader.

    n (and k for a rate) count every valid run of every task; the value is the equal-weight
    mean of the per-task statistics (geometric on the log scale), so it has no Wilson interval
    or IQR of its own: the per-task rows carry the dispersion, and a gap's interval comes from
    the shuffles. `task_aggregates`: each task's `aggregate`, when the caller has them.
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
    if task_aggregates is None:  # each task's own, when the caller has not made them
        task_aggregates = [aggregate(kind, list(group)) for group in per_task]
    values = [found.value for found in task_aggregates]
    if scale == LOG:
        mean = float(np.exp(np.mean(np.log(values))))
        return Aggregate(kind, n, value=mean), f"geometric mean of {len(per_task)} tasks' medians"
    mean = float(np.mean(values))
    return Aggregate(kind, n, value=mean, k=k), f"equal-weight mean over {len(per_task)} tasks"


def pooled_gap_verdict(
    kind: str,
    scale: str,
    cell: Sequence[Sequence],
    reference: Sequence[Sequence],
    key: str,
    draws: int = resampling.DRAWS,
    rng: np.random.Generator | None = None,
) -> stats.GapVerdict:
    """The verdict on the pooled gap of two cells over several tasks (`cell[i]` and
    `reference[i]`: their valid values in task i), from `draws` splits of each task's runs.

    The gap is pooled(cell) - pooled(reference), in the metric's unit, and the interval is
    built around it. The observed split is one of the equally likely splits, so it is one of the
    draws (its draw is 0, on the far side): `draws - 1` shuffles and it. That makes the 5%
    exact at the draws' own resolution, rather than 5% plus a hair (Phipson and Smyth,
    *Permutation p-values should never be zero*, 2010). The verdict is read on the scale the
    splits are compared on (a rate's studentized gap, a median's pooled scale), where a shuffle
    that ties the observed split gives exactly its value, then given back in the metric's unit.
    `rng`, if given, is the key's stream (`seeding.generator_for(key)`).
    """
    rng = resampling.generator_for(key) if rng is None else rng
    gap = pooled_statistic(kind, cell, scale) - pooled_statistic(kind, reference, scale)
    if kind == RATE:
        ratios = resampling.dealt_rate_ratios(cell, reference, rng, draws - 1)
        _, error = resampling.pooled_rate_gap(cell, reference)
        on_ratio = stats.verdict_from_draws(float(ratios[0]), ratios[0] - ratios)
        # A ratio of 1 is one standard error of the observed gap.
        return _in_unit(gap, on_ratio, lambda end: error * end, RATE_GAP_BOUNDS)
    transform = np.log if scale == LOG else _same
    dealt = resampling.dealt_median_gaps(cell, reference, rng, draws - 1, transform)
    on_scale = stats.verdict_from_draws(float(dealt[0]), dealt[0] - dealt)
    if scale == LINEAR:
        return _in_unit(gap, on_scale, _same)
    # The mean log ratio of the tasks' medians, given back at the reference's level: its
    # pooled value times the ratio, minus it.
    level = pooled_statistic(MEDIAN, reference, LOG)
    return _in_unit(gap, on_scale, lambda end: level * float(np.expm1(end)))


def _in_unit(gap: float, verdict: stats.GapVerdict, unit, bounds=None) -> stats.GapVerdict:
    """A verdict read on another scale, its interval's ends put in the metric's unit by the
    increasing `unit`, around the reported gap; p and the state are the scale's."""
    low, high = unit(verdict.ci_low), unit(verdict.ci_high)
    found = stats.verdict_from_interval(gap, low, high, verdict.p, bounds)
    # Rounding between the scales must not move a state: the scale's is the verdict.
    return dataclasses.replace(found, verdict=verdict.verdict)


def _same(values: np.ndarray) -> np.ndarray:
    return values
