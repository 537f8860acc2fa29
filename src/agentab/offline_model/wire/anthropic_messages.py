"""Anthropic messages (`…/messages`), streaming and not: what pi speaks to Anthropic, what the
judges' SDK speaks, and what Claude Code speaks."""

from __future__ import annotations

import json
import uuid

from agentab.offline_model.policy import Conversation, Reply
from agentab.offline_model.wire._common import ids, objects, text_of

NAME = "anthropic-messages"
# The header the API takes its key in: the recording proxy puts a real key there, nowhere else.
KEY_HEADER = ("x-api-key", "{key}")


def matches(method: str, path: str) -> bool:
    return method == "POST" and path.endswith("/messages")


def streaming(body: dict, path: str = "") -> bool:
    return bool(body.get("stream"))


def conversation(body: dict, path: str = "") -> Conversation:
    messages = body.get("messages", [])
    prompt = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "user")
    tools = {t["name"]: t.get("input_schema", {}) for t in body.get("tools", []) if "name" in t}
    choice = body.get("tool_choice") or {}
    forced = choice.get("name") if choice.get("type") == "tool" else None
    return Conversation(
        system=system_text(body),
        prompt=prompt,
        tools=tools,
        assistant_turns=sum(1 for m in messages if m.get("role") == "assistant"),
        thinking=anthropic_thinking(body),
        forced_tool=forced,
    )


def system_text(body: dict) -> str:
    """The `system` field, then any message with role `system`: Claude Code 2.1 sends its
    environment (working directory, agents, skills) as such a message after the prompt."""
    parts = [text_of(body.get("system", ""))]
    parts += [
        text_of(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system"
    ]
    return "\n".join(part for part in parts if part)


def side_reply(method: str, path: str, body: dict, policy) -> tuple[int, dict] | None:
    """Token counting (`…/messages/count_tokens`): a rough count, no policy step consumed."""
    if method == "POST" and path.endswith("/messages/count_tokens"):
        size = len(json.dumps(body.get("messages", []))) + len(json.dumps(body.get("system", "")))
        return 200, {"input_tokens": max(1, size // 4)}
    return None


def anthropic_thinking(body: dict) -> str | None:
    thinking = body.get("thinking") or {}
    if thinking.get("type") not in ("enabled", "adaptive"):
        return None
    effort = (body.get("output_config") or {}).get("effort")
    return effort or f"budget:{thinking.get('budget_tokens')}"


def anthropic_blocks(reply: Reply) -> list[dict]:
    blocks = []
    if reply.thinking:
        blocks.append({"type": "thinking", "thinking": reply.thinking, "signature": "offline"})
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input})
    return blocks


def anthropic_usage(usage: dict) -> dict:
    return {
        "input_tokens": usage["input"],
        "output_tokens": usage["output"],
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def message(reply: Reply, model: str, usage: dict) -> dict:
    return {
        # Unique per answer: Claude Code merges assistant messages that share an id into one.
        "id": f"msg_offline_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": anthropic_blocks(reply),
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": anthropic_usage(usage),
    }


def events(reply: Reply, model: str, usage: dict) -> list[str]:
    def event(name: str, payload: dict) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **payload})}\n\n"

    start = message(Reply(), model, {**usage, "output": 1})
    start["stop_reason"] = None
    events = [event("message_start", {"message": start})]
    for index, block in enumerate(anthropic_blocks(reply)):
        events.extend(anthropic_block_events(event, index, block))
    stop_reason = "tool_use" if reply.tool_calls else "end_turn"
    events.append(
        event(
            "message_delta",
            {
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage["output"]},
            },
        )
    )
    events.append(event("message_stop", {}))
    return events


def anthropic_block_events(event, index: int, block: dict) -> list[str]:
    kind = block["type"]
    if kind == "text":
        opening, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
    elif kind == "thinking":
        opening = {"type": "thinking", "thinking": ""}
        delta = {"type": "thinking_delta", "thinking": block["thinking"]}
    else:
        opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    events = [
        event("content_block_start", {"index": index, "content_block": opening}),
        event("content_block_delta", {"index": index, "delta": delta}),
    ]
    if kind == "thinking":
        signature = {"type": "signature_delta", "signature": block["signature"]}
        events.append(event("content_block_delta", {"index": index, "delta": signature}))
    events.append(event("content_block_stop", {"index": index}))
    return events


def error(message: str, status: int = 500) -> dict:
    kinds = {400: "invalid_request_error", 429: "rate_limit_error", 529: "overloaded_error"}
    return {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}


def usage_in(payload: dict) -> dict | None:
    """Token counts in a reply or one of its events (`message_start` carries the message's
    usage, `message_delta` the running output count): read by the recording proxy."""
    usage = payload.get("usage") or (payload.get("message") or {}).get("usage")
    if not isinstance(usage, dict):
        return None
    found = {
        "input": usage.get("input_tokens"),
        "output": usage.get("output_tokens"),
        "cache_read": usage.get("cache_read_input_tokens"),
        "cache_write": usage.get("cache_creation_input_tokens"),
    }
    return {key: value for key, value in found.items() if isinstance(value, int)} or None


def calls_in(payload: dict) -> set[str]:
    """The ids of the tool calls a reply, or one of its streamed events, asks for."""
    blocks = [payload.get("content_block"), *objects(payload.get("content"))]
    return ids(b.get("id") for b in objects(blocks) if b.get("type") == "tool_use")


def answered_calls(body: dict) -> set[str]:
    """The ids of the tool calls whose results a request carries."""
    blocks = [b for m in objects(body.get("messages")) for b in objects(m.get("content"))]
    return ids(b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result")
