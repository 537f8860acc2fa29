"""Claude Code's tools: Read, Edit, Write, Bash. File tools want absolute paths: the working
directory is the one Claude Code states in its request ("Primary working directory: …")."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

TOOLS = {"Read", "Edit", "Write", "Bash"}
WORKING_DIRECTORY = re.compile(r"Primary working directory: (\S+)")


def matches(tools: dict) -> bool:
    return bool(TOOLS & set(tools))


def call(action: str, args: dict, conversation) -> tuple[str, dict] | None:
    if action == "read":
        return "Read", {"file_path": absolute(args["path"], conversation)}
    if action == "edit":
        edit = {"old_string": args["old"], "new_string": args["new"]}
        return "Edit", {"file_path": absolute(args["path"], conversation), **edit}
    if action == "write":
        return "Write", {
            "file_path": absolute(args["path"], conversation),
            "content": args["content"],
        }
    if action == "run":
        return "Bash", {"command": args["command"], "description": "Run a command"}
    return None


def absolute(path: str, conversation) -> str:
    found = WORKING_DIRECTORY.search(conversation.system)
    if PurePosixPath(path).is_absolute() or not found:
        return path
    return str(PurePosixPath(found.group(1)) / path)
