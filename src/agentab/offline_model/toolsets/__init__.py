"""Harness-neutral policy actions, mapped onto the tools a request offers.

A policy is written once in actions: `read` (path), `edit` (path, old, new), `write` (path,
content), `run` (command). Each harness offers its own tools for them (pi: read/edit/write/bash;
Claude Code: Read/Edit/Write/Bash; …). A toolset module here recognises one harness's tools and
turns an action into a call of them:

- `matches(tools: dict[str, dict]) -> bool`: the request offers some of this toolset's tools;
- `call(action: str, args: dict, conversation) -> (tool name, input) | None`: the call, or
  None when the toolset has no tool for that action.

Adding a harness adds one module here when its tools are new. Found by module name.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType

ACTIONS = ("read", "edit", "write", "run")


@cache
def toolset_modules() -> tuple[ModuleType, ...]:
    return tuple(
        importlib.import_module(f"{__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
        if not info.name.startswith("_")
    )


def tool_call(action: str, args: dict, conversation) -> tuple[str, dict] | None:
    """The call of an offered tool that performs the action, or None if no tool offered does."""
    for toolset in toolset_modules():
        if toolset.matches(conversation.tools):
            found = toolset.call(action, args, conversation)
            if found is not None and found[0] in conversation.tools:
                return found
    return None
