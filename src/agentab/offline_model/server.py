"""The HTTP side of the offline model: every wire API of `agentab.offline_model.wire`.

Every model request is appended to the log as one JSON line (`{"seq", "at", "origin", "api",
"path", "body", "headers", "reply"}`, the recording proxy's format) before it is answered, so the
log is the oracle of what reached the model even for a request that is never answered. Header
values are never logged (one of them may carry a key): `headers` holds their names. `origin`
says whether the harness sent it or something its tools started (`agentab.offline_model.origin`).
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from agentab.offline_model import wire
from agentab.offline_model.local_server import (
    DEFAULT_LOG_CAP,
    BodyTooLarge,
    LocalServer,
    read_body,
    refusal_record,
    send_refusal,
)
from agentab.offline_model.origin import HARNESS, ToolCallWatch, arrival_time
from agentab.offline_model.policy import Policy, Reply

# A rough, deterministic token count: the stream must carry usage and cost, not exact figures.
CHARS_PER_TOKEN = 4


class OfflineModelServer(LocalServer):
    def __init__(
        self,
        policy: Policy,
        seed: int,
        log_path: Path,
        port: int = 0,
        log_cap=DEFAULT_LOG_CAP,
        harness: str | None = None,
    ):
        super().__init__(RequestHandler, port, log_cap)
        self.policy = policy
        self.harness = harness  # whose tools a policy's actions become (None: no action runs)
        self.seed = seed
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.touch()
        self._lock = threading.Lock()
        self._requests = 0
        self.tool_calls = ToolCallWatch()

    def next_request_number(self) -> int:
        with self._lock:
            self._requests += 1
            return self._requests

    def log(self, record: dict) -> None:
        line = self.log_line(record)
        with self._lock, self.log_path.open("a", encoding="utf-8") as log:
            log.write(line)


class RequestHandler(BaseHTTPRequestHandler):
    server: OfflineModelServer

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass  # the JSONL log is the record; stderr chatter would only bury it

    def do_GET(self):
        self._answer("GET", b"")

    def do_POST(self):
        arrived = arrival_time()
        try:
            raw = read_body(self)
        except BodyTooLarge as error:
            seq = self.server.next_request_number()
            self.server.log({"seq": seq, **refusal_record(error, self.path, arrived)})
            send_refusal(self, error)
            return
        self._answer("POST", raw)

    def _answer(self, method: str, raw: bytes) -> None:
        arrived = arrival_time()
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        api = wire.wire_for(method, self.path)
        side = side_reply(method, self.path, body, self.server.policy)
        if side is not None:
            self._send_json(*side)
            return
        if api is None:
            self._send_json(404, {"error": {"message": f"no such endpoint: {method} {self.path}"}})
            return
        number = self.server.next_request_number()
        policy = self.server.policy
        headers = sorted({name.lower() for name in self.headers})
        origin = self.server.tool_calls.origin(api, body)
        record = {
            "seq": number,
            "at": arrived,
            "origin": origin,
            "api": api.NAME,
            "path": self.path,
            "body": body,
            "headers": headers,
        }
        conversation = replace(api.conversation(body, self.path), harness=self.server.harness)
        failure = None if conversation.forced_tool else policy.failure_for(number)
        if policy.hang and not conversation.forced_tool:
            self.server.log({**record, "reply": None})
            self.server.stopping.wait()
            return
        if failure:
            status, message = failure
            self.server.log({**record, "reply": {"status": status, "error": message}})
            self._send_json(status, api.error(message, status))
            return
        reply = policy.reply(conversation, self.server.seed)
        usage = estimate_usage(raw, reply)
        self.server.log(
            {**record, "reply": {"status": 200, **reply_as_dict(reply), "usage": usage}}
        )
        model = body.get("model", "") or policy.name
        message = api.message(reply, model, usage)
        if origin == HARNESS and not conversation.forced_tool:  # a judge's verdict runs nothing
            # The calls as the harness will name them in its results: each API names them its
            # own way (Gemini by the function's name).
            self.server.tool_calls.asked(api.calls_in(message))
        if api.streaming(body, self.path):
            self._send_events(api.events(reply, model, usage))
        else:
            self._send_json(200, message)

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


def side_reply(method: str, path: str, body: dict, policy: Policy) -> tuple[int, dict] | None:
    """An answer to a request that is not a model turn (consumes no step, is not logged as one):
    a wire API's own (token counting, …), else a model listing for any GET."""
    for api in wire.wire_modules():
        answer = getattr(api, "side_reply", None)
        found = answer(method, path.split("?", 1)[0].rstrip("/"), body, policy) if answer else None
        if found is not None:
            return found
    if method == "GET":
        return 200, {"object": "list", "data": [{"id": policy.name, "object": "model"}]}
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
