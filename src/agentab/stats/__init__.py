"""The statistics of a gap, pure: numbers in, intervals, p-values and verdicts out (no scenario, no file).

`rule` is the verdict rule (the resampled gap's interval decides; Holm across a family) and
this package's face: `stats.holm`, `stats.DRAWS`, … are `rule`'s names, loaded on first use so
that importing one module of the package costs no more than that module. `resampling` draws the
gaps (the bootstrap, the stratified permutation) with `discrete_laws` and `median_law`;
`seeding` their random streams, one per key; `strata` is the equal-weight mean over tasks;
`sequential` the anytime-valid confidence sequences of the sequential rule.
"""

from __future__ import annotations

import importlib

MODULES = ("discrete_laws", "median_law", "resampling", "rule", "seeding", "sequential", "strata")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    if name in MODULES:  # `from agentab.stats import resampling`, before `rule` is loaded
        return importlib.import_module(f"agentab.stats.{name}")
    rule = importlib.import_module("agentab.stats.rule")
    try:
        value = getattr(rule, name)
    except AttributeError:
        raise AttributeError(f"module 'agentab.stats' has no attribute {name!r}") from None
    globals()[name] = value  # found once: the next use is a plain attribute, thousands a synthesis
    return value
