"""A scripted Anthropic-messages endpoint on 127.0.0.1, for testing the judge with the real SDK.

Each request takes the next scripted answer (the last one repeats), and every request is kept
with its headers so that a test can read exactly what the judge sent.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    status: int
    body: dict
    headers: dict = field(default_factory=dict)


def verdict(tool_input: Any, tool_name: str = "record_verdict") -> Answer:
    return Answer(
        200,
        {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [
                {"type": "tool_use", "id": "toolu_test", "name": tool_name, "input": tool_input}
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 7},
        },
    )


def error(status: int, kind: str, message: str) -> Answer:
    return Answer(status, {"type": "error", "error": {"type": kind, "message": message}})


OVERLOADED = error(529, "overloaded_error", "Overloaded")
SERVER_ERROR = error(500, "api_error", "Internal server error")
RATE_LIMITED = error(429, "rate_limit_error", "Too many requests")
UNAUTHORIZED = error(401, "authentication_error", "invalid x-api-key")


@dataclass
class Received:
    path: str
    headers: dict
    body: dict


class ScriptedModel:
    """Serves ``answers`` in order; use as a context manager, read ``base_url`` and ``received``."""

    def __init__(self, answers: list[Answer]):
        self.answers = list(answers)
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_answer(self) -> Answer:
        with self._lock:
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with model._lock:
                    model.received.append(Received(self.path, dict(self.headers), body))
                answer = model._next_answer()
                payload = json.dumps(answer.body).encode()
                self.send_response(answer.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        return Handler
