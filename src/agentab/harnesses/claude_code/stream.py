"""Reading a `claude -p --output-format stream-json --verbose` stream: its lines into
StreamFacts (ClaudeStreamFacts: tools, turns, the last result's totals) and the main agent's
messages, tool calls and tool results into transcript lines.

Separate from the adapter (`__init__.py`), which builds the run and decides its outcome: this is
the part that only parses what Claude Code printed, and imports nothing of the adapter.
"""

from __future__ import annotations

from pathlib import Path

from agentab.harnesses.base import (
    StreamFacts,
    stream_events,
    stream_facts_events,
    transcript_call,
    transcript_message,
    transcript_result,
)

TOKEN_FIELDS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_input_tokens",
    "cache_write": "cache_creation_input_tokens",
}


def read_claude_stream(path: Path) -> StreamFacts:
    """Facts of a `claude -p --output-format stream-json --verbose` stream.

    Claude Code prints one `assistant` line per content block (several lines share a message
    id) and a `result` line each time the session goes idle: a background agent that finishes
    later adds another. The last `result` decides the outcome; tokens and cost are the session's
    totals it carries.
    """
    facts = ClaudeStreamFacts()
    turns: set[str] = set()
    for number, event in stream_facts_events(path, facts.errors):
        kind = event.get("type")
        if kind == "assistant" and not event.get("parent_tool_use_id"):
            message = event.get("message") or {}
            if event.get("is_api_error_message") or event.get("error"):
                continue  # the error is stated by the result line
            turns.add(str(message.get("id") or number))
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    name = block.get("name", "?")
                    facts.tool_calls[name] = facts.tool_calls.get(name, 0) + 1
        elif kind == "result":
            read_result(event, facts)
    facts.turns = len(turns)
    return facts


class ClaudeStreamFacts(StreamFacts):
    """StreamFacts plus Claude Code's `terminal_reason` (why the session stopped)."""

    stop_reason_detail: str = ""


def read_result(event: dict, facts: StreamFacts) -> None:
    add_result_tokens(event, facts)
    if event.get("total_cost_usd") is not None:
        facts.cost_usd = float(event["total_cost_usd"])  # the session's total so far
    facts.settled = True
    facts.stop_reason_detail = str(event.get("terminal_reason") or "")
    if event.get("is_error"):
        facts.stop_reason = "error"
        facts.error_status = event.get("api_error_status")
        facts.errors.append(str(event.get("result") or event.get("subtype") or "error"))
    else:
        facts.stop_reason = str(event.get("stop_reason") or event.get("subtype") or "end_turn")
        facts.final_message = str(event.get("result") or "")


# `model_usage_since_last_result` (per model, subagents included) adds up over result lines;
# `usage` is only the main agent's share of the latest stretch.
MODEL_USAGE_FIELDS = {
    "input": "inputTokens",
    "output": "outputTokens",
    "cache_read": "cacheReadInputTokens",
    "cache_write": "cacheCreationInputTokens",
}


def add_result_tokens(event: dict, facts: StreamFacts) -> None:
    per_model = event.get("model_usage_since_last_result")
    if isinstance(per_model, dict):
        for usage in per_model.values():
            for ours, theirs in MODEL_USAGE_FIELDS.items():
                facts.tokens[ours] += int(usage.get(theirs) or 0)
        return
    usage = event.get("usage") or {}
    for ours, theirs in TOKEN_FIELDS.items():
        facts.tokens[ours] += int(usage.get(theirs) or 0)


TOOL_KINDS = {"Read": "read", "Edit": "edit", "Write": "write", "Bash": "run"}


def claude_transcript(path: Path, task: str = "") -> list[dict]:
    """The conversation of the main agent: its messages (blocks of one message id joined),
    tool calls and tool results. Subagents' lines (`parent_tool_use_id`) are left out. The
    stream never shows the task (given on the command line): `task` opens the conversation."""
    lines: list[dict] = [transcript_message("user", task)] if task else []
    names: dict[str, str] = {}
    current: str | None = None
    for event in stream_events(path):
        if event.get("parent_tool_use_id") or event.get("type") not in ("assistant", "user"):
            continue
        message = event.get("message") or {}
        blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
        if event["type"] == "assistant":
            if event.get("is_api_error_message") or event.get("error"):
                continue
            message_id = str(message.get("id") or "")
            if current is None or message_id != current or not lines:
                lines.append(transcript_message("assistant", "", [], {"input": 0, "output": 0}))
                current = message_id
            add_assistant_blocks(lines[-1], blocks, message.get("usage") or {}, names)
        else:
            current = None
            for block in blocks:
                if block.get("type") == "tool_result":
                    call_id = str(block.get("tool_use_id", ""))
                    output = block_text(block.get("content"))
                    lines.append(
                        transcript_result(
                            call_id, names.get(call_id, ""), output, bool(block.get("is_error"))
                        )
                    )
                elif block.get("type") == "text":
                    lines.append(transcript_message("user", block.get("text", "")))
    return lines


def add_assistant_blocks(line: dict, blocks: list[dict], usage: dict, names: dict) -> None:
    for block in blocks:
        if block.get("type") == "text":
            line["text"] = "\n".join(t for t in (line["text"], block.get("text", "")) if t)
        elif block.get("type") == "tool_use":
            name, arguments = block.get("name", ""), block.get("input") or {}
            names[str(block.get("id", ""))] = name
            command = arguments.get("command") if name == "Bash" else None
            kind = TOOL_KINDS.get(name, "other")
            line["tool_calls"].append(
                transcript_call(str(block.get("id", "")), name, kind, arguments, command)
            )
    # The stream's usage of a message is its `message_start` one: the input is whole (cache
    # reads and writes are input too), the output is the first token's count, never the turn's
    # (the stream's `1 out`). The turn's output tokens are left unsaid rather than wrong; the
    # run page takes them from the request log, where each reply states its own.
    line["usage"] = {
        "input": sum(
            int(usage.get(name) or 0)
            for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
    }


def block_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict)).strip()
    return ""
