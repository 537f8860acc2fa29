"""The synthesis: from every run's measures.json to cells, gaps, verdicts and their prose.

`runs/` is what each run's files say (`measures` builds a run's measures.json, `results` reads a
results folder back); `verdicts` computes cell values and gaps with the statistics of
`agentab.stats`; `tables`, `figures/` and `prose` write them; `synthesize` does all of it in
that order. Plans (`power`, …) are `agentab.planning`'s. No face: a step that imports
`measures` must not pay for numpy.

The modules that moved out of this folder stay importable by their old names
(`agentab.synthesis.stats`, `agentab.synthesis.measures`, …), with a DeprecationWarning: see
docs/internals.md for the map.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings

# Old module -> where it lives now (docs/internals.md, "Where the synthesis went").
MOVED = {
    **{m: f"agentab.stats.{m}" for m in ("resampling", "discrete_laws", "median_law", "strata")},
    "sequential": "agentab.stats.sequential",
    "stats": "agentab.stats.rule",
    **{
        m: f"agentab.synthesis.runs.{m}"
        for m in ("builtin", "usage", "named_paths", "integrity", "tool_failures", "measures")
    },
    **{m: f"agentab.synthesis.runs.{m}" for m in ("results", "protected", "environment_diff")},
    "brick_use": "agentab.synthesis.runs.brick_use",
    **{
        m: f"agentab.synthesis.figures.{m}"
        for m in ("svg", "figure", "frontier_figure", "sequence_figure")
    },
    **{m: f"agentab.planning.{m}" for m in ("power", "sequential_plan", "label_plan")},
}


class _MovedModules:
    """`import agentab.synthesis.<old>` gives the module at its new place, and says so once.
    (A finder and loader by the protocol alone: importlib.abc's base classes import
    importlib.resources and tempfile before `agentab synthesize` can start its reading.)"""

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, name = fullname.rpartition(".")
        if prefix != __name__ or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        new = MOVED[spec.name.rpartition(".")[2]]
        warnings.warn(
            f"{spec.name} is now {new}; the old name goes in agentab 0.2",
            DeprecationWarning,
            stacklevel=3,
        )
        return importlib.import_module(new)

    def exec_module(self, module):
        pass  # it ran where it lives


def __getattr__(name: str):
    if name in MOVED:  # `from agentab.synthesis import stats`, the old way
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


sys.meta_path.append(_MovedModules())
