"""Harness-neutral policy actions, mapped onto the tools a request offers.

A policy is written once in actions: `read` (path), `edit` (path, old, new), `write` (path,
content), `run` (command), `load_skill` (skill). Each harness offers its own tools for them (pi:
read/edit/write/bash; Claude Code: Read/Edit/Write/Bash; …). A toolset module here recognises
one harness's tools and turns an action into a call of them:

- `matches(tools: dict[str, dict]) -> bool`: the request offers some of this toolset's tools;
- `call(action: str, args: dict, conversation) -> (tool name, input) | None`: the call, or
  None when the toolset has no tool for that action;
- `load_skill(name: str, conversation) -> (tool name, input) | None`: how a model loads the
  skill `name` where the request lists it (the harness's skill tool, or a read of the SKILL.md
  path the listing gives); None when the request does not list it, so a cell without the
  skill skips the step.

Adding a harness adds one module here when its tools are new. Found by module name.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType

ACTIONS = ("read", "edit", "write", "run", "load_skill")


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
            if action == "load_skill":
                loader = getattr(toolset, "load_skill", None)
                found = loader(args["skill"], conversation) if loader else None
            else:
                found = toolset.call(action, args, conversation)
            if found is not None and found[0] in conversation.tools:
                return found
    return None
