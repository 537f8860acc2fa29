"""Harness adapters: one file per agent CLI, found by the scenario's `[agent].harness`.

Harness `claude-code` is the module `agentab.harnesses.claude_code`, whose `HARNESS` is the
adapter class. Adding a harness is adding that file; nothing here names one.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache

from agentab.errors import AgentabError, problem
from agentab.harnesses.base import Harness, HarnessFault

__all__ = ["Harness", "HarnessFault", "get_harness", "harness_names"]

# Modules of this package that are machinery, not adapters.
NOT_ADAPTERS = frozenset({"base", "npm", "shared"})


def module_name(harness: str) -> str:
    return harness.replace("-", "_")


def harness_names() -> list[str]:
    """Every harness name, one per adapter module of this package."""
    return sorted(
        info.name.replace("_", "-")
        for info in pkgutil.iter_modules(__path__)
        if info.name not in NOT_ADAPTERS and not info.name.startswith("_")
    )


@cache
def adapter_class(name: str) -> type[Harness]:
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) or name not in harness_names():
        raise AgentabError(
            problem(
                "scenario",
                "agent.harness",
                f"no harness named {name!r}",
                f"use one of: {', '.join(harness_names())}",
            )
        )
    return importlib.import_module(f"{__name__}.{module_name(name)}").HARNESS


def get_harness(name: str) -> Harness:
    return adapter_class(name)()
