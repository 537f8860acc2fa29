"""agentab: A/B experiments for coding-agent harnesses.

The names a script needs (docs/api.md); docs/internals.md draws the packages behind them:

    import agentab

    scenario = agentab.load_scenario("scenarios/demo/scenario.toml")
    runs = agentab.read_results("results/demo")  # a pandas DataFrame, a row per run and metric
    result = agentab.synthesize("results/demo")  # cells.csv, gaps.csv, synthesis.md, ...

A file or folder a person can fix raises `agentab.AgentabError`, whose message names the file,
the key and the fix.

Each name is imported from the module that defines it when it is first used: every
`python -m agentab.steps.<step>` and every harness imports this file first, and must not pay
for the synthesis's libraries (half a second, pandas another).
"""

from __future__ import annotations

__all__ = ["AgentabError", "load_scenario", "read_results", "synthesize"]

# Each public name -> the module that defines it; moving one changes this line only.
_HOMES = {
    "AgentabError": "agentab.errors",
    "load_scenario": "agentab.scenario",
    "read_results": "agentab.synthesis.runs.frame",
    "synthesize": "agentab.synthesis.synthesize",
}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'agentab' has no attribute {name!r}")
    import importlib  # here: every step's process imports this file, and pays for what it imports

    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value  # once: the next use is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
