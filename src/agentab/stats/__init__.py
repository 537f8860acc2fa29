"""The statistics of a gap, pure: numbers in, intervals, p-values and verdicts out (no scenario, no file).

`rule` is the verdict rule (the resampled gap's interval decides; Holm across a family), and its
names are this package's: `stats.holm`, `stats.DRAWS`, …. `resampling` draws the gaps (the
bootstrap, the stratified permutation) with `discrete_laws` and `median_law`; `seeding` their
random streams, one per key; `strata` is the equal-weight mean over tasks; `sequential` the
anytime-valid confidence sequences of the sequential rule.
"""

from agentab.stats.rule import (
    CONFIDENCE,
    DRAWS,
    ESTABLISHED,
    INCONCLUSIVE,
    MIN_RUNS_PER_GROUP,
    MIN_RUNS_PER_TASK,
    SEED,
    GapVerdict,
    bootstrap_gap,
    generator_for,
    holm,
    percentile_interval,
    resample_statistic,
    statistic,
    two_sided_p,
    verdict_from_draws,
    verdict_from_interval,
    verdicts_from_draws,
)

__all__ = [
    "CONFIDENCE",
    "DRAWS",
    "ESTABLISHED",
    "INCONCLUSIVE",
    "MIN_RUNS_PER_GROUP",
    "MIN_RUNS_PER_TASK",
    "SEED",
    "GapVerdict",
    "bootstrap_gap",
    "generator_for",
    "holm",
    "percentile_interval",
    "resample_statistic",
    "statistic",
    "two_sided_p",
    "verdict_from_draws",
    "verdict_from_interval",
    "verdicts_from_draws",
]
