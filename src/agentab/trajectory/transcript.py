"""A run's `transcript.jsonl` read as data: the agent wrote every text in it.

The format is the harness-neutral one every adapter writes (`agentab.harnesses.base`,
docs/validators.md): message lines (`role`, `text`, `tool_calls`, `usage`) and `tool_result`
lines. A line that is not a JSON object is skipped; a field of the wrong type reads as empty,
so that no line of a hostile transcript decides more than its own values.
"""

from __future__ import annotations

from pathlib import Path

from agentab.files import read_json_lines


def read_transcript(path: Path) -> list[dict]:
    """The JSON objects of a transcript, one a line, in order; [] when it cannot be read."""
    return read_json_lines(path)


def is_message(entry: dict, role: str | None = None) -> bool:
    return entry.get("type") == "message" and (role is None or entry.get("role") == role)


def tool_calls(entry: dict) -> list[dict]:
    """The calls of a message line, each a dict (anything else in the list is left out)."""
    calls = entry.get("tool_calls")
    return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []


def arguments(call: dict) -> dict:
    given = call.get("input")
    return given if isinstance(given, dict) else {}


def text(value) -> str:
    return value if isinstance(value, str) else ""


def count(value) -> int | None:
    """A token count as the stream stated it: a non-negative int, else unknown."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None
