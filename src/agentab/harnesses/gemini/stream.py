"""Reading a `gemini --output-format stream-json` stream: its events into StreamFacts (tools,
tokens, the result), its messages and tool events into transcript lines.

Separate from the adapter (`__init__.py`), which builds the run and decides its outcome: this is
the part that only parses what Gemini CLI printed, and imports nothing of the adapter.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentab.harnesses.base import (
    StreamFacts,
    stream_events,
    transcript_call,
    transcript_message,
    transcript_result,
)

API_STATUS = re.compile(r'"code"\s*:\s*(\d{3})|\bstatus[ :]+(\d{3})\b')


def read_gemini_stream(path: Path) -> StreamFacts:
    """Facts of a `gemini -p --output-format stream-json` stream (tokens, no cost)."""
    facts = StreamFacts()
    for event in stream_events(path):
        kind = event.get("type")
        if kind == "tool_use":
            name = str(event.get("tool_name", "?"))
            facts.tool_calls[name] = facts.tool_calls.get(name, 0) + 1
        elif kind == "result":
            read_result(event, facts)
        elif kind == "error":
            facts.errors.append(str(event.get("message", "error")))
    turns = [line for line in gemini_transcript(path) if line.get("role") == "assistant"]
    facts.turns = len(turns)
    texts = [turn["text"] for turn in turns if turn["text"]]
    facts.final_message = texts[-1] if texts else ""
    return facts


def read_result(event: dict, facts: StreamFacts) -> None:
    facts.settled = True
    facts.stop_reason = str(event.get("status", ""))
    stats = event.get("stats") or {}
    cached = int(stats.get("cached") or 0)
    facts.tokens["input"] += int(stats.get("input", int(stats.get("input_tokens") or 0) - cached))
    facts.tokens["output"] += int(stats.get("output_tokens") or 0)
    facts.tokens["cache_read"] += cached
    error = event.get("error")
    if facts.stop_reason == "error" or error:
        message = str((error or {}).get("message", "error")) if isinstance(error, dict) else ""
        facts.errors.append(message or "error")
        facts.error_status = http_status(message)


def http_status(message: str) -> int | None:
    found = API_STATUS.search(message)
    return int(found.group(1) or found.group(2)) if found else None


TOOL_KINDS = {
    "read_file": "read",
    "replace": "edit",
    "write_file": "write",
    "run_shell_command": "run",
}


def gemini_transcript(path: Path) -> list[dict]:
    """The conversation of a stream-json stream. Gemini CLI streams an assistant message as text
    deltas and its function calls as `tool_use` events; one model response is everything the
    assistant says between two batches of tool results."""
    lines: list[dict] = []
    turn: dict | None = None
    for event in stream_events(path):
        kind = event.get("type")
        if kind == "message" and event.get("role") == "user":
            turn = None
            lines.append(transcript_message("user", str(event.get("content", ""))))
        elif kind == "message" and event.get("role") == "assistant":
            turn = turn or open_turn(lines)
            turn["text"] += str(event.get("content", ""))
        elif kind == "tool_use":
            turn = turn or open_turn(lines)
            turn["tool_calls"].append(tool_call(event))
        elif kind == "tool_result":
            turn = None
            lines.append(tool_result(event, lines))
    return lines


def open_turn(lines: list[dict]) -> dict:
    turn = transcript_message("assistant", "")
    lines.append(turn)
    return turn


def tool_call(event: dict) -> dict:
    name = str(event.get("tool_name", ""))
    arguments = event.get("parameters") or {}
    kind = TOOL_KINDS.get(name, "other")
    command = arguments.get("command") if kind == "run" else None
    return transcript_call(str(event.get("tool_id", "")), name, kind, arguments, command)


def tool_result(event: dict, lines: list[dict]) -> dict:
    call_id = str(event.get("tool_id", ""))
    names = {
        call["id"]: call["tool"]
        for line in lines
        if line.get("type") == "message"
        for call in line["tool_calls"]
    }
    output = event.get("output")
    if output is None and isinstance(event.get("error"), dict):
        output = event["error"].get("message", "")
    return transcript_result(
        call_id, names.get(call_id, ""), str(output or ""), event.get("status") != "success"
    )
