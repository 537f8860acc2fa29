"""Claude Code's tools: Read, Edit, Write, Bash. File tools want absolute paths: the working
directory is the one Claude Code states in its request ("Primary working directory: …")."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

WORKING_DIRECTORY = re.compile(r"Primary working directory: (\S+)")


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


# A skill in the listing of Claude Code's role-`system` message (measured):
# `- agentab-bricks:zqskill (agentab-bricks:zq-skill): <description>`, or `- name: <description>`.
LISTED_SKILL = re.compile(r"^- ([\w.:-]+)(?: \(([\w.:-]+)\))?: ", re.MULTILINE)


def load_skill(name: str, conversation) -> tuple[str, dict] | None:
    """Its `Skill` tool with the skill's first name in the listing, as a model copies it."""
    for found in LISTED_SKILL.finditer(conversation.system):
        names = [n for n in found.groups() if n]
        if any(n == name or n.endswith(f":{name}") for n in names):
            return "Skill", {"skill": names[0]}
    return None
