"""Per-turn output tokens a transcript leaves unsaid, taken from the run's request log.

Claude Code's stream states a message's usage as of its first token: the input whole (cache
reads and writes are input too), the output one token. The transcript keeps the input and says
nothing of the output rather than something wrong. The request log (`model-requests.jsonl`:
the offline model's, or the recording proxy's on the way to a real provider) holds each reply's
usage as the model stated it once the reply was whole, so a turn's true output is that of the
request that produced it.

A turn is matched to its request, in order: the first request after the previous turn's whose
input is the turn's, and, where the log names the reply's tool calls (the offline model does),
whose calls are the turn's. The main agent's turns are sequential, so its requests come in the
same order; a request of Claude Code's own (a subagent, a title) between them is skipped since
its input differs. A turn that matches no request keeps its output unsaid.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentab.report.conversation import Conversation, Turn

INPUT_PARTS = ("input", "cache_read", "cache_write")


def fill_output_tokens(conversation: Conversation | None, request_log: Path) -> None:
    """Give each assistant turn that has an input count but no output count the output of its
    request in the log. Nothing changes without a log, or for a turn with no request of its own."""
    if conversation is None:
        return
    waiting = [turn for turn in conversation.turns if lacks_output(turn)]
    if not waiting:
        return
    replies = answered_requests(request_log)
    position = 0
    for turn in waiting:
        found = next_match(turn, replies, position)
        if found is not None:
            turn.usage["output"] = replies[found]["usage"]["output"]
            position = found + 1


def lacks_output(turn: Turn) -> bool:
    return (
        turn.role == "assistant"
        and isinstance(turn.usage, dict)
        and isinstance(turn.usage.get("input"), int)
        and "output" not in turn.usage
    )


def answered_requests(request_log: Path) -> list[dict]:
    """The replies of the log that state their output tokens, in the order of their requests."""
    try:
        lines = Path(request_log).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    replies = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        reply = record.get("reply") if isinstance(record, dict) else None
        usage = reply.get("usage") if isinstance(reply, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("output"), int):
            replies.append({"seq": record.get("seq"), **reply})
    return sorted(replies, key=lambda reply: reply["seq"] if isinstance(reply["seq"], int) else 0)


def next_match(turn: Turn, replies: list[dict], start: int) -> int | None:
    for index in range(start, len(replies)):
        if stated_input(replies[index]["usage"]) == turn.usage["input"] and same_calls(
            turn, replies[index]
        ):
            return index
    return None


def stated_input(usage: dict) -> int:
    return sum(int(usage.get(part) or 0) for part in INPUT_PARTS)


def same_calls(turn: Turn, reply: dict) -> bool:
    """Whether the reply asked for the turn's tool calls, where the log names them."""
    calls = reply.get("tool_calls")
    if not isinstance(calls, list):
        return True  # the recording proxy keeps no reply content: the input alone decides
    named = [str(call.get("id")) for call in calls if isinstance(call, dict)]
    return named == [call.id for call in turn.calls]
