"""pi's tools: read, edit (a list of exact replacements), write, bash. Paths relative to the cwd."""

from __future__ import annotations

import re


def call(action: str, args: dict, conversation) -> tuple[str, dict] | None:
    if action == "read":
        return "read", {"path": args["path"]}
    if action == "edit":
        edit = {"oldText": args["old"], "newText": args["new"]}
        return "edit", {"path": args["path"], "edits": [edit]}
    if action == "write":
        return "write", {"path": args["path"], "content": args["content"]}
    if action == "run":
        return "bash", {"command": args["command"]}
    return None


def load_skill(name: str, conversation) -> tuple[str, dict] | None:
    """pi lists a skill as `<name>…</name><description>…</description><location>…</location>`
    and tells the model to load it with `read` (measured): a read of that location."""
    listed = re.search(
        rf"<name>{re.escape(name)}</name>\s*<description>.*?</description>\s*"
        r"<location>(.*?)</location>",
        conversation.system,
        re.DOTALL,
    )
    return call("read", {"path": listed.group(1).strip()}, conversation) if listed else None
