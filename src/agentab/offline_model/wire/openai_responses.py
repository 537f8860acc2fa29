"""OpenAI Responses (`…/responses`), streaming and not: the only wire API Codex CLI speaks.

A request carries `instructions` (the base system prompt), `input` (a list of items: messages
of the roles developer, user and assistant, the model's own function calls and their outputs,
reasoning items), `tools` (`function` tools with a JSON schema, `custom` tools that take free
text) and `reasoning.effort`. The reply is a list of output items (a reasoning summary, a
message, function calls), streamed as `response.created`, `response.output_item.added`, text
deltas, `response.output_item.done` and `response.completed` with the usage.

A tool offered as `custom` (free text, e.g. a grammar-checked patch) is called with a
`custom_tool_call` whose `input` is the text; a policy gives that text as the call's `input`
key, so the server marks such calls by the schema it recorded for the tool (`CUSTOM_TOOL`).
"""

from __future__ import annotations

import json
import time

from agentab.offline_model.policy import Conversation, Reply, ToolCall
from agentab.offline_model.wire._common import ids, objects, text_of

NAME = "openai-responses"
# The header the API takes its key in: the recording proxy puts a real key there, nowhere else.
KEY_HEADER = ("Authorization", "Bearer {key}")
# The schema recorded in Conversation.tools for a tool that takes free text, not JSON.
CUSTOM_TOOL = "x-custom-tool"
# Input items the model itself produced: consecutive ones form one assistant turn.
MODEL_ITEMS = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})


def matches(method: str, path: str) -> bool:
    return method == "POST" and path.endswith("/responses")


def streaming(body: dict, path: str = "") -> bool:
    return bool(body.get("stream"))


def conversation(body: dict, path: str = "") -> Conversation:
    items = input_items(body)
    system = [text_of(body.get("instructions") or "")]
    system += [item_text(i) for i in items if role_of(i) in ("system", "developer")]
    prompt = [item_text(i) for i in items if role_of(i) == "user"]
    choice = body.get("tool_choice")
    forced = choice.get("name") if isinstance(choice, dict) else None
    return Conversation(
        system="\n".join(part for part in system if part),
        prompt="\n".join(part for part in prompt if part),
        tools=offered_tools(body.get("tools") or []),
        assistant_turns=assistant_turns(items),
        thinking=reasoning_effort(body),
        forced_tool=forced,
        tool_outputs=tuple(
            text_of(item.get("output")) for item in items if item.get("type") in OUTPUT_ITEMS
        ),
    )


def reasoning_effort(body: dict) -> str | None:
    """`reasoning.effort` as sent; "none" asks for no reasoning, as an absent setting does."""
    effort = (body.get("reasoning") or {}).get("effort")
    return None if effort in (None, "", "none") else str(effort)


def input_items(body: dict) -> list[dict]:
    items = body.get("input") or []
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": items}]
    return [item for item in items if isinstance(item, dict)]


def role_of(item: dict) -> str | None:
    if item.get("type", "message") != "message":
        return None
    return item.get("role")


def item_text(item: dict) -> str:
    return text_of(item.get("content"))


def offered_tools(tools: list) -> dict[str, dict]:
    """name -> JSON schema of a function tool's arguments; a custom tool gets CUSTOM_TOOL."""
    offered = {}
    for tool in tools:
        if not isinstance(tool, dict) or "name" not in tool:
            continue
        if tool.get("type") == "custom":
            offered[tool["name"]] = {CUSTOM_TOOL: True, "format": tool.get("format")}
        elif tool.get("type", "function") == "function":
            offered[tool["name"]] = tool.get("parameters") or {}
    return offered


def assistant_turns(items: list[dict]) -> int:
    """How many assistant replies the input holds: a run of items the model produced (its
    message, reasoning, function calls) is one reply, however many items it has."""
    turns = 0
    in_reply = False
    for item in items:
        produced = item.get("type") in MODEL_ITEMS or role_of(item) == "assistant"
        if produced and not in_reply:
            turns += 1
        in_reply = produced
    return turns


# ------------------------------------------------------------------------------ the reply


def output_items(reply: Reply) -> list[dict]:
    items = []
    if reply.thinking:
        items.append(
            {
                "type": "reasoning",
                "id": "rs_offline",
                "summary": [{"type": "summary_text", "text": reply.thinking}],
            }
        )
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": "msg_offline",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    items.extend(call_item(index, call) for index, call in enumerate(reply.tool_calls))
    return items


def call_item(index: int, call: ToolCall) -> dict:
    if call.input.get(CUSTOM_TOOL):
        return {
            "type": "custom_tool_call",
            "id": f"ctc_offline_{index}",
            "status": "completed",
            "call_id": call.id,
            "name": call.name,
            "input": str(call.input.get("input", "")),
        }
    return {
        "type": "function_call",
        "id": f"fc_offline_{index}",
        "status": "completed",
        "call_id": call.id,
        "name": call.name,
        "arguments": json.dumps(call.input),
    }


def responses_usage(usage: dict) -> dict:
    return {
        "input_tokens": usage["input"],
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage["output"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage["input"] + usage["output"],
    }


def response_object(status: str, model: str, output: list, usage: dict | None) -> dict:
    return {
        "id": "resp_offline",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": output,
        "usage": responses_usage(usage) if usage else None,
    }


def message(reply: Reply, model: str, usage: dict) -> dict:
    return response_object("completed", model, output_items(reply), usage)


def events(reply: Reply, model: str, usage: dict) -> list[str]:
    sequence = iter(range(1_000_000))

    def event(name: str, payload: dict) -> str:
        data = {"type": name, "sequence_number": next(sequence), **payload}
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    items = output_items(reply)
    events = [
        event("response.created", {"response": response_object("in_progress", model, [], None)})
    ]
    for index, item in enumerate(items):
        events.append(event("response.output_item.added", {"output_index": index, "item": item}))
        events.extend(item_deltas(event, index, item))
        events.append(event("response.output_item.done", {"output_index": index, "item": item}))
    done = response_object("completed", model, items, usage)
    events.append(event("response.completed", {"response": done}))
    return events


def item_deltas(event, index: int, item: dict) -> list[str]:
    """The deltas a provider streams inside an item, before the item is done."""
    where = {"item_id": item["id"], "output_index": index}
    if item["type"] == "message":
        text = item["content"][0]["text"]
        return [
            event("response.output_text.delta", {**where, "content_index": 0, "delta": text}),
            event("response.output_text.done", {**where, "content_index": 0, "text": text}),
        ]
    if item["type"] == "reasoning":
        text = item["summary"][0]["text"]
        part = {**where, "summary_index": 0}
        return [
            event("response.reasoning_summary_part.added", part),
            event("response.reasoning_summary_text.delta", {**part, "delta": text}),
            event("response.reasoning_summary_text.done", {**part, "text": text}),
        ]
    if item["type"] == "function_call":
        arguments = item["arguments"]
        return [
            event("response.function_call_arguments.delta", {**where, "delta": arguments}),
            event("response.function_call_arguments.done", {**where, "arguments": arguments}),
        ]
    return []


def error(message: str, status: int = 500) -> dict:
    kinds = {400: "invalid_request_error", 429: "rate_limit_exceeded"}
    kind = kinds.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}


def usage_in(payload: dict) -> dict | None:
    """Token counts in a response or its `response.completed` event: read by the recording
    proxy."""
    usage = (payload.get("response") or payload).get("usage")
    if not isinstance(usage, dict):
        return None
    details = usage.get("input_tokens_details") or {}
    found = {
        "input": usage.get("input_tokens"),
        "output": usage.get("output_tokens"),
        "cache_read": details.get("cached_tokens"),
    }
    return {key: value for key, value in found.items() if isinstance(value, int)} or None


CALL_ITEMS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})


def calls_in(payload: dict) -> set[str]:
    """The ids of the tool calls a response, or one of its streamed events, asks for."""
    response = payload.get("response") if isinstance(payload.get("response"), dict) else {}
    items = [payload.get("item"), *objects(payload.get("output")), *objects(response.get("output"))]
    return ids(i.get("call_id") for i in objects(items) if i.get("type") in CALL_ITEMS)


def answered_calls(body: dict) -> set[str]:
    """The ids of the tool calls whose outputs a request carries."""
    outputs = OUTPUT_ITEMS | {"local_shell_call_output"}
    return ids(i.get("call_id") for i in input_items(body) if i.get("type") in outputs)
