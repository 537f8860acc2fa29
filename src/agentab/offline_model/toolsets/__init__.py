"""Harness-neutral policy actions, mapped onto the tools a request offers.

A policy is written once in actions: `read` (path), `edit` (path, old, new), `write` (path,
content), `run` (command), `load_skill` (skill). Each harness offers its own tools for them (pi:
read/edit/write/bash; Claude Code: Read/Edit/Write/Bash; …). The toolset module named as the
harness the server answers (`claude-code`: `claude_code.py`) turns an action into a call of its
tools; the server is told that name, it never guesses it from the tools a request offers:

- `call(action: str, args: dict, conversation) -> (tool name, input) | None`: the call, or
  None when the toolset has no tool for that action;
- `load_skill(name: str, conversation) -> (tool name, input) | None`: how a model loads the
  skill `name` where the request lists it (the harness's skill tool, or a read of the SKILL.md
  path the listing gives); None when the request does not list it, so a cell without the
  skill skips the step.

Adding a harness adds its module here. A server told no harness (a judge's) runs no action.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType

ACTIONS = ("read", "edit", "write", "run", "load_skill")


@cache
def toolset_for(harness: str | None) -> ModuleType | None:
    """The toolset of the harness named, or None when it has none here."""
    name = (harness or "").replace("-", "_")
    names = {info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")}
    return importlib.import_module(f"{__name__}.{name}") if name in names else None


def tool_call(action: str, args: dict, conversation) -> tuple[str, dict] | None:
    """The call of the conversation's harness's tool that performs the action, or None if the
    request does not offer it."""
    toolset = toolset_for(conversation.harness)
    if toolset is None:
        return None
    if action == "load_skill":
        loader = getattr(toolset, "load_skill", None)
        found = loader(args["skill"], conversation) if loader else None
    else:
        found = toolset.call(action, args, conversation)
    return found if found is not None and found[0] in conversation.tools else None
