"""Gemini CLI's tools: read_file, replace, write_file, run_shell_command."""

from __future__ import annotations


def call(action: str, args: dict, conversation) -> tuple[str, dict] | None:
    if action == "read":
        return "read_file", {"file_path": args["path"]}
    if action == "edit":
        return "replace", {
            "file_path": args["path"],
            "instruction": f"Replace the exact text in {args['path']}.",
            "old_string": args["old"],
            "new_string": args["new"],
        }
    if action == "write":
        return "write_file", {"file_path": args["path"], "content": args["content"]}
    if action == "run":
        return "run_shell_command", {"command": args["command"]}
    return None
