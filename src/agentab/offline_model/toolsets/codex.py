"""Codex CLI's tools: a shell (`exec_command` in 0.171; `shell_command` or `shell` when its
unified exec is off) and patches in Codex's own format (`apply_patch`).

Codex 0.171 offers a model it has no metadata for (the offline model's policies) no
`apply_patch` tool: its instructions tell the model to run `apply_patch` as a command, which
Codex intercepts and applies itself. So, as a Codex model would:

- read: `cat <path>` in the shell;
- run: the command in the shell;
- edit: an `*** Update File` patch, through the `apply_patch` tool when offered, else as an
  `apply_patch` command in the shell. A patch replaces whole lines, so the lines holding the
  old text are taken from what the tools returned so far (the file as the agent read it); a
  patch for text the agent never saw replaces the old text as if it were a whole line, and
  Codex rejects it as a real model's blind edit would be;
- write: an `*** Add File` patch, the same way.
"""

from __future__ import annotations

import re
import shlex

from agentab.offline_model.wire.openai_responses import CUSTOM_TOOL

SHELLS = ("exec_command", "shell_command", "shell")


def call(action: str, args: dict, conversation) -> tuple[str, dict] | None:
    if action == "read":
        return shell_call(f"cat {shlex.quote(args['path'])}", conversation.tools)
    if action == "run":
        return shell_call(args["command"], conversation.tools)
    if action == "edit":
        old_lines, new_lines = whole_lines(args["old"], args["new"], conversation.tool_outputs)
        return patch_call(update_patch(args["path"], old_lines, new_lines), conversation.tools)
    if action == "write":
        return patch_call(add_patch(args["path"], args["content"]), conversation.tools)
    return None


def shell_call(command: str, tools: dict) -> tuple[str, dict] | None:
    if "exec_command" in tools:
        return "exec_command", {"cmd": command}
    if "shell_command" in tools:
        return "shell_command", {"command": command}
    if "shell" in tools:
        return "shell", {"command": ["bash", "-lc", command]}
    return None


def patch_call(patch: str, tools: dict) -> tuple[str, dict] | None:
    schema = tools.get("apply_patch")
    if schema is None:
        return shell_call(f"apply_patch <<'PATCH'\n{patch}\nPATCH", tools)
    if schema.get(CUSTOM_TOOL):
        return "apply_patch", {CUSTOM_TOOL: True, "input": patch}
    return "apply_patch", {"input": patch}


def whole_lines(old: str, new: str, outputs) -> tuple[list[str], list[str]]:
    """The lines around `old` in the latest tool output that shows it, before and after the
    replacement; `old` and `new` themselves when no output shows it."""
    for output in reversed(outputs):
        at = output.find(old)
        if at < 0:
            continue
        start = output.rfind("\n", 0, at) + 1
        end = output.find("\n", at + len(old))
        block = output[start : end if end >= 0 else len(output)]
        return block.split("\n"), block.replace(old, new, 1).split("\n")
    return old.split("\n"), new.split("\n")


def update_patch(path: str, old_lines: list[str], new_lines: list[str]) -> str:
    body = [f"-{line}" for line in old_lines] + [f"+{line}" for line in new_lines]
    return "\n".join(["*** Begin Patch", f"*** Update File: {path}", "@@", *body, "*** End Patch"])


def add_patch(path: str, content: str) -> str:
    body = [f"+{line}" for line in content.removesuffix("\n").split("\n")]
    return "\n".join(["*** Begin Patch", f"*** Add File: {path}", *body, "*** End Patch"])


# Codex lists a skill as `- name: description (file: r0/folder/SKILL.md)` under a table of
# roots, "- `r0` = `/path`" (measured on 0.171): the model reads the file in its shell.
LISTED_SKILL = r"^- {name}: .*\(file: (\w+)/(\S+)\)\s*$"
SKILL_ROOT = r"^- `{root}` = `([^`]+)`"


def load_skill(name: str, conversation) -> tuple[str, dict] | None:
    listed = re.search(LISTED_SKILL.format(name=re.escape(name)), conversation.system, re.M)
    if not listed:
        return None
    root = re.search(SKILL_ROOT.format(root=re.escape(listed.group(1))), conversation.system, re.M)
    if not root:
        return None
    return call("read", {"path": f"{root.group(1)}/{listed.group(2)}"}, conversation)
