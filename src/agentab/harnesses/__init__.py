"""Harness adapters: one file per agent CLI, found by the scenario's `[agent].harness`."""

from __future__ import annotations

from agentab.errors import AgentabError, problem
from agentab.harnesses.base import Harness, HarnessFault

__all__ = ["Harness", "HarnessFault", "get_harness", "harness_names"]


def _registry() -> dict[str, type[Harness]]:
    from agentab.harnesses.pi import PiHarness

    return {"pi": PiHarness}


def harness_names() -> list[str]:
    return sorted(_registry())


def get_harness(name: str) -> Harness:
    registry = _registry()
    if name not in registry:
        raise AgentabError(
            problem(
                "scenario",
                "agent.harness",
                f"no harness named {name!r}",
                f"use one of: {', '.join(sorted(registry))}",
            )
        )
    return registry[name]()
