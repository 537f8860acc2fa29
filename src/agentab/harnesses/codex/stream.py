"""Reading a `codex exec --json` stream: its events into StreamFacts, its items into transcript
lines (replies, tool calls, tool results, the clone's path taken out).

Separate from the adapter (`__init__.py`), which builds the run and decides its outcome: this is
the part that only parses what Codex printed, and imports nothing of the adapter.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from agentab.harnesses.base import (
    StreamFacts,
    stream_events,
    stream_facts_events,
    transcript_call,
    transcript_message,
    transcript_result,
)

# exec --json item types that are tool calls, and the neutral kind of each.
TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search"}
STATUS_IN_MESSAGE = re.compile(r"\b(?:status:?|status code:?)\s*(\d{3})\b", re.IGNORECASE)


def read_codex_stream(path: Path) -> StreamFacts:
    """Facts of a `codex exec --json` stream: items, the turn's usage and how it ended."""
    facts = StreamFacts()
    for _, event in stream_facts_events(path, facts.errors):
        read_event(facts, event)
    facts.turns = sum(1 for line in codex_transcript(path) if line.get("role") == "assistant")
    return facts


def read_event(facts: StreamFacts, event: dict) -> None:
    kind = event.get("type")
    if kind == "item.completed":
        item = event.get("item") or {}
        item_type = item.get("type")
        if item_type in TOOL_ITEMS:
            name = tool_name(item)
            facts.tool_calls[name] = facts.tool_calls.get(name, 0) + 1
        elif item_type == "agent_message":
            facts.final_message = str(item.get("text", ""))
        elif item_type == "error":
            facts.errors.append(str(item.get("message", "")))  # a warning; Codex carried on
    elif kind == "error":
        facts.errors.append(str(event.get("message", "")))
    elif kind == "turn.completed":
        usage = event.get("usage") or {}
        facts.tokens["input"] += int(usage.get("input_tokens") or 0)
        facts.tokens["output"] += int(usage.get("output_tokens") or 0)
        facts.tokens["cache_read"] += int(usage.get("cached_input_tokens") or 0)
        facts.tokens["cache_write"] += int(usage.get("cache_write_input_tokens") or 0)
        facts.stop_reason = "completed"
        facts.settled = True
    elif kind == "turn.failed":
        message = str((event.get("error") or {}).get("message", ""))
        facts.errors.append(message)
        facts.stop_reason = "failed"
        status = STATUS_IN_MESSAGE.search(message)
        facts.error_status = int(status.group(1)) if status else None


def tool_name(item: dict) -> str:
    if item.get("type") == "mcp_tool_call":
        return f"mcp:{item.get('server', '?')}/{item.get('tool', '?')}"
    return str(item.get("type"))


def shell_command(command: str) -> str:
    """The command the agent gave, without the `bash -lc '…'` Codex wraps it in."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[0].endswith("sh") and words[1] in ("-lc", "-c"):
        return words[2]
    return command


def codex_transcript(path: Path, clone: Path | None = None, task: str = "") -> list[dict]:
    """The conversation of a Codex stream. Codex's stream has no model replies as such, only
    items: a reply is taken to start at a reasoning or message item, or at a tool call that
    follows a finished one (a reply's text comes before its tool calls). The stream never shows
    the task: `task` opens the conversation."""
    lines: list[dict] = [transcript_message("user", task)] if task else []
    reply: dict | None = None
    tool_done = False
    for event in stream_events(path):
        if event.get("type") != "item.completed":
            continue
        item = relative_to(event.get("item") or {}, clone)
        item_type = item.get("type")
        if item_type in ("reasoning", "agent_message"):
            if reply is None or reply["tool_calls"] or (reply["text"] and item_type == "reasoning"):
                reply = new_reply(lines)
                tool_done = False
            if item_type == "agent_message":
                reply["text"] = "\n".join(t for t in (reply["text"], item.get("text", "")) if t)
        elif item_type in TOOL_ITEMS:
            if reply is None or tool_done:
                reply = new_reply(lines)
            reply["tool_calls"].append(tool_call(item))
            lines.append(tool_result(item))
            tool_done = True
    return lines


def new_reply(lines: list[dict]) -> dict:
    reply = transcript_message("assistant", "")
    lines.append(reply)
    return reply


def tool_call(item: dict) -> dict:
    item_type = item.get("type")
    if item_type == "command_execution":
        command = shell_command(str(item.get("command", "")))
        return transcript_call(item.get("id", ""), item_type, "run", {"command": command}, command)
    if item_type == "file_change":
        changes = item.get("changes") or []
        kind = "write" if changes and all(c.get("kind") == "add" for c in changes) else "edit"
        return transcript_call(item.get("id", ""), item_type, kind, {"changes": changes})
    arguments = {k: v for k, v in item.items() if k not in ("id", "type", "status", "result")}
    return transcript_call(item.get("id", ""), tool_name(item), "other", arguments)


def tool_result(item: dict) -> dict:
    item_type = item.get("type")
    status = item.get("status")
    if item_type == "command_execution":
        output = str(item.get("aggregated_output", ""))
        failed = status != "completed" or item.get("exit_code") not in (0, None)
    elif item_type == "file_change":
        changes = item.get("changes") or []
        output = "\n".join(f"{c.get('kind', '?')} {c.get('path', '?')}" for c in changes)
        failed = status != "completed"
    else:
        output = json.dumps(item.get("result") or item.get("error") or "")
        failed = status not in ("completed", None)
    return transcript_result(item.get("id", ""), tool_name(item), output, failed)


def relative_to(value, clone: Path | None):
    """The item with the clone's path taken out of every string: validators are blind to it."""
    if clone is None:
        return value
    if isinstance(value, str):
        # "<clone>/a.py" -> "a.py", "<clone>" -> "."; "<clone>2" is another folder, kept.
        pattern = re.escape(str(clone)) + r"(/|(?![\w.-]))"
        return re.sub(pattern, lambda m: "" if m.group(1) else ".", value)
    if isinstance(value, list):
        return [relative_to(v, clone) for v in value]
    if isinstance(value, dict):
        return {k: relative_to(v, clone) for k, v in value.items()}
    return value
