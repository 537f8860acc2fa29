"""The Gemini API (`…/models/{model}:streamGenerateContent?alt=sse`, `:generateContent`,
`:countTokens`): what Gemini CLI speaks.

The model and whether the answer streams are in the path, not the body. A request reads as:

- `systemInstruction` → `Conversation.system`;
- the text parts of the `user` contents → `prompt` (a function response is a `user` content
  too, with no text part, so it adds nothing);
- `tools[].functionDeclarations` → `tools` (name → `parametersJsonSchema`, or the older
  `parameters`);
- the `model` contents → `assistant_turns`;
- `generationConfig.thinkingConfig` → `thinking`: `"budget:<n>"` for a `thinkingBudget`
  (Gemini 2.5; a budget of 0 asks for no thinking: None), the lower-case `thinkingLevel` for
  Gemini 3 (`"high"`), None without a thinkingConfig. `includeThoughts` alone asks for nothing.

An answer is a `GenerateContentResponse`: the reply's parts (a `thought` part when the request
asks for thinking, a text part, one `functionCall` part per tool call), `finishReason`, and
`usageMetadata`; streamed as server-sent events of the same objects, one part each.
"""

from __future__ import annotations

import json
import re

from agentab.offline_model.policy import Conversation, Reply
from agentab.offline_model.wire._common import ids, objects

NAME = "gemini"
# The header the API takes its key in: the recording proxy puts a real key there, nowhere else
# (Gemini also reads `?key=`, which the proxy never fills).
KEY_HEADER = ("x-goog-api-key", "{key}")

METHOD_PATTERN = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")
MODEL_TURN_METHODS = ("generateContent", "streamGenerateContent")
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
CHARS_PER_TOKEN = 4


def method_of(path: str) -> tuple[str, str] | None:
    """(model, method) of a Gemini API path, with or without its query string."""
    found = METHOD_PATTERN.search(path.split("?", 1)[0].rstrip("/"))
    return (found["model"], found["method"]) if found else None


def matches(method: str, path: str) -> bool:
    found = method_of(path)
    return method == "POST" and found is not None and found[1] in MODEL_TURN_METHODS


def streaming(body: dict, path: str = "") -> bool:
    found = method_of(path)
    return found is not None and found[1] == "streamGenerateContent"


def conversation(body: dict, path: str = "") -> Conversation:
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    prompt = "\n".join(parts_text(c.get("parts")) for c in contents if c.get("role") == "user")
    config = body.get("generationConfig") or {}
    return Conversation(
        system=parts_text((body.get("systemInstruction") or {}).get("parts")),
        prompt=prompt.strip("\n"),
        tools=declared_tools(body.get("tools") or []),
        assistant_turns=sum(1 for c in contents if c.get("role") == "model"),
        thinking=gemini_thinking(config.get("thinkingConfig") or {}),
        forced_tool=forced_function(body.get("toolConfig") or {}),
    )


def parts_text(parts) -> str:
    """The text of a content's parts (thought parts excluded: they are not what was said)."""
    if isinstance(parts, str):
        return parts
    texts = [
        p["text"]
        for p in parts or []
        if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    ]
    return "\n".join(text for text in texts if text)


def declared_tools(tools: list) -> dict[str, dict]:
    declared = {}
    for tool in tools:
        for function in (tool or {}).get("functionDeclarations") or []:
            if "name" in function:
                schema = function.get("parametersJsonSchema") or function.get("parameters") or {}
                declared[function["name"]] = schema
    return declared


def gemini_thinking(thinking: dict) -> str | None:
    if thinking.get("thinkingLevel"):
        return str(thinking["thinkingLevel"]).lower()
    budget = thinking.get("thinkingBudget")
    if budget is None or budget == 0:
        return None
    return f"budget:{budget}"


def forced_function(tool_config: dict) -> str | None:
    calling = tool_config.get("functionCallingConfig") or {}
    allowed = calling.get("allowedFunctionNames") or []
    return allowed[0] if calling.get("mode") == "ANY" and len(allowed) == 1 else None


def reply_parts(reply: Reply) -> list[dict]:
    parts = []
    if reply.thinking:
        parts.append({"text": reply.thinking, "thought": True})
    if reply.text:
        parts.append({"text": reply.text})
    for call in reply.tool_calls:
        parts.append({"functionCall": {"name": call.name, "args": call.input, "id": call.id}})
    return parts


def usage_metadata(usage: dict) -> dict:
    return {
        "promptTokenCount": usage["input"],
        "candidatesTokenCount": usage["output"],
        "totalTokenCount": usage["input"] + usage["output"],
    }


def response(parts: list[dict], model: str, usage: dict | None, finish: bool) -> dict:
    candidate: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    answer: dict = {"candidates": [candidate], "modelVersion": model}
    if usage is not None:
        answer["usageMetadata"] = usage_metadata(usage)
    return answer


def message(reply: Reply, model: str, usage: dict) -> dict:
    return response(reply_parts(reply), model, usage, finish=True)


def events(reply: Reply, model: str, usage: dict) -> list[str]:
    parts = reply_parts(reply) or [{"text": ""}]
    chunks = [response([part], model, None, finish=False) for part in parts]
    chunks[-1] = response([parts[-1]], model, usage, finish=True)
    return [f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks]


def error(message: str, status: int = 500) -> dict:
    return {
        "error": {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}
    }


def side_reply(method: str, path: str, body: dict, policy) -> tuple[int, dict] | None:
    """`:countTokens` is answered here: a count, not a model turn."""
    found = method_of(path)
    if method != "POST" or found is None or found[1] != "countTokens":
        return None
    size = len(json.dumps(body.get("contents") or body))
    return 200, {"totalTokens": max(1, size // CHARS_PER_TOKEN)}


def model_of(body: dict, path: str = "") -> str:
    """The model a request names: in its path (`models/<model>:<method>`), not its body."""
    found = method_of(path.split("?", 1)[0].rstrip("/"))
    return found[0] if found else ""


def usage_in(payload: dict) -> dict | None:
    """Token counts in a response or one streamed chunk (each carries the running totals):
    read by the recording proxy."""
    usage = payload.get("usageMetadata")
    if not isinstance(usage, dict):
        return None
    output = [usage.get(k) for k in ("candidatesTokenCount", "thoughtsTokenCount")]
    counted = [value for value in output if isinstance(value, int)]
    found = {
        "input": usage.get("promptTokenCount"),
        "output": sum(counted) if counted else None,
        "cache_read": usage.get("cachedContentTokenCount"),
    }
    return {key: value for key, value in found.items() if isinstance(value, int)} or None


def calls_in(payload: dict) -> set[str]:
    """The tool calls a response, or one of its streamed chunks, asks for, each by its
    function's name: the API's call `id` is optional and a real Gemini leaves it out, and then
    Gemini CLI makes up an id of its own for the function's response."""
    contents = [c.get("content") for c in objects(payload.get("candidates"))]
    parts = [p for c in objects(contents) for p in objects(c.get("parts"))]
    return ids(function_name(p.get("functionCall")) for p in parts)


def answered_calls(body: dict) -> set[str]:
    """The tool calls whose responses a request carries, by their function's name."""
    parts = [p for c in objects(body.get("contents")) for p in objects(c.get("parts"))]
    return ids(function_name(p.get("functionResponse")) for p in parts)


def function_name(part) -> str | None:
    return part.get("name") if isinstance(part, dict) else None
