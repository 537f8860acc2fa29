"""The HTTP side of the offline model: OpenAI chat completions and Anthropic messages.

Both wire APIs are served, streaming (SSE) and not, on any path ending in
`/chat/completions` or `/messages`. Every request is appended to the log as one JSON line
(`{"seq", "api", "path", "body", "reply"}`) before it is answered, so the log is the oracle of
what reached the model even for a request that is never answered.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from agentab.offline_model.policy import Conversation, Policy, Reply

# A rough, deterministic token count: the stream must carry usage and cost, not exact figures.
CHARS_PER_TOKEN = 4


class OfflineModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, policy: Policy, seed: int, log_path: Path, port: int = 0):
        super().__init__(("127.0.0.1", port), RequestHandler)
        self.policy = policy
        self.seed = seed
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.touch()
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._requests = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def next_request_number(self) -> int:
        with self._lock:
            self._requests += 1
            return self._requests

    def log(self, record: dict) -> None:
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock, self.log_path.open("a", encoding="utf-8") as log:
            log.write(line)


class RequestHandler(BaseHTTPRequestHandler):
    server: OfflineModelServer

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass  # the JSONL log is the record; stderr chatter would only bury it

    def do_GET(self):
        self._send_json(200, {"object": "list", "data": [{"id": self.server.policy.name}]})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        api = api_of(self.path)
        if api is None:
            self._send_json(404, {"error": {"message": f"no such endpoint: {self.path}"}})
            return
        number = self.server.next_request_number()
        policy = self.server.policy
        record = {"seq": number, "api": api, "path": self.path, "body": body}
        conversation = CONVERSATION_READERS[api](body)
        failure = None if conversation.forced_tool else policy.failure_for(number)
        if policy.hang and not conversation.forced_tool:
            self.server.log({**record, "reply": None})
            self.server.stopping.wait()
            return
        if failure:
            self.server.log({**record, "reply": {"error": failure[1], "status": failure[0]}})
            self._send_json(failure[0], ERROR_BODIES[api](failure[1]))
            return
        reply = policy.reply(conversation, self.server.seed)
        self.server.log({**record, "reply": reply_as_dict(reply)})
        usage = estimate_usage(raw, reply)
        if body.get("stream"):
            self._send_events(STREAM_WRITERS[api](reply, body.get("model", ""), usage))
        else:
            self._send_json(200, MESSAGE_WRITERS[api](reply, body.get("model", ""), usage))

    def _send_json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, events: list[str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for event in events:
            self.wfile.write(event.encode())
            self.wfile.flush()


def api_of(path: str) -> str | None:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "openai-chat"
    if path.endswith("/messages"):
        return "anthropic-messages"
    return None


def reply_as_dict(reply: Reply) -> dict:
    return {
        "text": reply.text,
        "thinking": reply.thinking,
        "tool_calls": [{"name": c.name, "input": c.input, "id": c.id} for c in reply.tool_calls],
    }


def estimate_usage(raw_request: bytes, reply: Reply) -> dict:
    output = len(json.dumps(reply_as_dict(reply)))
    return {"input": max(1, len(raw_request) // CHARS_PER_TOKEN), "output": max(1, output // 4)}


def text_of(content) -> str:
    """Text of a message content: a string or a list of typed blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [text_of(block.get("text", block.get("content", ""))) for block in content]
        return "\n".join(part for part in parts if part)
    return ""


# --- OpenAI chat completions ---------------------------------------------------------------


def read_openai_conversation(body: dict) -> Conversation:
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


def openai_message(reply: Reply, model: str, usage: dict) -> dict:
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


def openai_events(reply: Reply, model: str, usage: dict) -> list[str]:
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


def finish_reason(reply: Reply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def openai_usage(usage: dict) -> dict:
    return {
        "prompt_tokens": usage["input"],
        "completion_tokens": usage["output"],
        "total_tokens": usage["input"] + usage["output"],
    }


def openai_error(message: str) -> dict:
    return {"error": {"message": message, "type": "offline_model_error", "code": None}}


# --- Anthropic messages ----------------------------------------------------------------------


def read_anthropic_conversation(body: dict) -> Conversation:
    messages = body.get("messages", [])
    prompt = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "user")
    tools = {t["name"]: t.get("input_schema", {}) for t in body.get("tools", []) if "name" in t}
    choice = body.get("tool_choice") or {}
    forced = choice.get("name") if choice.get("type") == "tool" else None
    return Conversation(
        system=text_of(body.get("system", "")),
        prompt=prompt,
        tools=tools,
        assistant_turns=sum(1 for m in messages if m.get("role") == "assistant"),
        thinking=anthropic_thinking(body),
        forced_tool=forced,
    )


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


def anthropic_message(reply: Reply, model: str, usage: dict) -> dict:
    return {
        "id": "msg_offline",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": anthropic_blocks(reply),
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": anthropic_usage(usage),
    }


def anthropic_events(reply: Reply, model: str, usage: dict) -> list[str]:
    def event(name: str, payload: dict) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **payload})}\n\n"

    start = anthropic_message(Reply(), model, {**usage, "output": 1})
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


def anthropic_error(message: str) -> dict:
    return {"type": "error", "error": {"type": "api_error", "message": message}}


CONVERSATION_READERS = {
    "openai-chat": read_openai_conversation,
    "anthropic-messages": read_anthropic_conversation,
}
MESSAGE_WRITERS = {"openai-chat": openai_message, "anthropic-messages": anthropic_message}
STREAM_WRITERS = {"openai-chat": openai_events, "anthropic-messages": anthropic_events}
ERROR_BODIES = {"openai-chat": openai_error, "anthropic-messages": anthropic_error}
