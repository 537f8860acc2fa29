"""OpenAI chat completions (`…/chat/completions`), streaming and not: what pi speaks to an
OpenAI-style provider."""

from __future__ import annotations

import json
import time

from agentab.offline_model.policy import Conversation, Reply
from agentab.offline_model.wire._common import finish_reason, ids, objects, text_of

NAME = "openai-chat"
# The header the API takes its key in: the recording proxy puts a real key there, nowhere else.
KEY_HEADER = ("Authorization", "Bearer {key}")


def matches(method: str, path: str) -> bool:
    return method == "POST" and path.endswith("/chat/completions")


def streaming(body: dict, path: str = "") -> bool:
    return bool(body.get("stream"))


def conversation(body: dict, path: str = "") -> Conversation:
    messages = body.get("messages", [])
    system = "\n".join(
        text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
    )
    prompt = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "user")
    tools = {
        t["function"]["name"]: t["function"].get("parameters", {})
        for t in body.get("tools", [])
        if "function" in t
    }
    choice = body.get("tool_choice")
    forced = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    reasoning = body.get("reasoning_effort") or (body.get("reasoning") or {}).get("effort")
    return Conversation(
        system=system,
        prompt=prompt,
        tools=tools,
        assistant_turns=sum(1 for m in messages if m.get("role") == "assistant"),
        thinking=reasoning,
        forced_tool=forced,
    )


def message(reply: Reply, model: str, usage: dict) -> dict:
    message = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.input)},
            }
            for call in reply.tool_calls
        ]
    return {
        "id": "chatcmpl-offline",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(reply)}],
        "usage": openai_usage(usage),
    }


def events(reply: Reply, model: str, usage: dict) -> list[str]:
    def chunk(delta: dict, finish=None, **extra) -> str:
        payload = {
            "id": "chatcmpl-offline",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(payload)}\n\n"

    events = [chunk({"role": "assistant", "content": ""})]
    if reply.thinking:
        events.append(chunk({"reasoning_content": reply.thinking}))
    if reply.text:
        events.append(chunk({"content": reply.text}))
    for index, call in enumerate(reply.tool_calls):
        head = {"index": index, "id": call.id, "type": "function"}
        head["function"] = {"name": call.name, "arguments": ""}
        events.append(chunk({"tool_calls": [head]}))
        arguments = {"index": index, "function": {"arguments": json.dumps(call.input)}}
        events.append(chunk({"tool_calls": [arguments]}))
    events.append(chunk({}, finish_reason(reply)))
    usage_chunk = {
        "id": "chatcmpl-offline",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [],
        "usage": openai_usage(usage),
    }
    events.append(f"data: {json.dumps(usage_chunk)}\n\n")
    events.append("data: [DONE]\n\n")
    return events


def openai_usage(usage: dict) -> dict:
    return {
        "prompt_tokens": usage["input"],
        "completion_tokens": usage["output"],
        "total_tokens": usage["input"] + usage["output"],
    }


def error(message: str, status: int = 500) -> dict:
    return {"error": {"message": message, "type": "offline_model_error", "code": status}}


def usage_in(payload: dict) -> dict | None:
    """Token counts (and a cost, where the provider states one, as OpenRouter does) in a reply
    or its final chunk: read by the recording proxy."""
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details") or {}
    found = {
        "input": usage.get("prompt_tokens"),
        "output": usage.get("completion_tokens"),
        "cache_read": details.get("cached_tokens"),
        "cost_usd": usage.get("cost"),
    }
    return {k: v for k, v in found.items() if isinstance(v, int | float)} or None


def calls_in(payload: dict) -> set[str]:
    """The ids of the tool calls a reply, or one of its streamed chunks, asks for (a streamed
    call names its id in its first chunk)."""
    choices = objects(payload.get("choices"))
    parts = [part for c in choices for part in objects([c.get("message"), c.get("delta")])]
    return ids(call.get("id") for part in parts for call in objects(part.get("tool_calls")))


def answered_calls(body: dict) -> set[str]:
    """The ids of the tool calls whose results a request carries."""
    messages = objects(body.get("messages"))
    return ids(m.get("tool_call_id") for m in messages if m.get("role") == "tool")
