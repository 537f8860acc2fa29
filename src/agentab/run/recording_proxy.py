"""The recording proxy: what a run sent a real provider, recorded on its way there.

For a run against a real provider the run step starts one proxy on 127.0.0.1 for the length of
the run and points the harness at it (DESIGN §8). Each request goes on to the provider's
endpoint as the harness sent it, with one change: `Accept-Encoding: identity`, so that the
proxy can read the usage the provider states (on 127.0.0.1 compression buys nothing). The reply
comes back byte for byte as it arrives, streamed events included.

Each model request becomes one line of `model-requests.jsonl`, in the offline model's format:
`seq`, `api`, `path`, `body`, the request's header *names*, and a reply summary (`status`,
`usage`, an error message). Header values are never written: one of them carries the key. A key
in the query string is blanked, and any request header value is blanked from an error message
the provider echoes.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

from agentab.errors import AgentabError, problem
from agentab.harnesses.base import HarnessFault
from agentab.offline_model import wire
from agentab.offline_model.local_server import LocalServer, serving

# Each provider's own origin; the harness's path (`/v1/messages`, `/v1beta/models/…`) follows it.
DEFAULT_ENDPOINTS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com",
    "google": "https://generativelanguage.googleapis.com",
    "openrouter": "https://openrouter.ai",
    "groq": "https://api.groq.com",
    "mistral": "https://api.mistral.ai",
    "xai": "https://api.x.ai",
}
# Headers that belong to one connection, not to the request (RFC 9110 §7.6.1), and the two the
# proxy sets itself.
NOT_FORWARDED = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    }
)
NOT_RETURNED = frozenset(NOT_FORWARDED - {"content-length"} | {"server", "date"})
SECRET_QUERY = re.compile(r"((?:^|[?&])(?:key|api_key|apikey|access_token)=)[^&]*", re.I)
ERROR_TEXT_LIMIT = 2000
WHOLE_REPLY_LIMIT = 20 * 1024 * 1024  # a reply beyond this is passed on, its usage not read
SHORTEST_SECRET = 8  # header values shorter than this (a version, a flag) are not keys


def endpoint_for(provider: str, configured: Mapping[str, str]) -> str:
    """The provider's endpoint: `provider_endpoints` in the config, else the provider's own."""
    endpoint = configured.get(provider) or DEFAULT_ENDPOINTS.get(provider)
    if endpoint is None:
        raise AgentabError(
            problem(
                "config/config.yaml",
                "provider_endpoints",
                f"agentab knows no endpoint for provider {provider!r}, so it cannot record "
                "what the run sends it",
                f"add `provider_endpoints: {{{provider}: https://…}}` (the API's origin)",
            )
        )
    return endpoint.rstrip("/")


def loggable_path(path: str) -> str:
    return SECRET_QUERY.sub(r"\1<secret>", path)


# What the harness holds instead of the provider's key: the proxy, outside the agent's sandbox,
# puts the real key where this stands (a header or the query), so that `env`, /proc and every
# file the agent can write show no key.
PLACEHOLDER_KEY = "agentab-placeholder-key"


class RecordingProxy(LocalServer):
    def __init__(self, endpoint: str, log_path: Path, timeout_s: float, api_key: str | None = None):
        super().__init__(ProxyHandler)
        self.api_key = api_key
        self.endpoint = urlsplit(endpoint)
        self.timeout_s = timeout_s
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.touch()
        self._lock = threading.Lock()
        self._requests = 0
        self._in_flight: dict[int, dict] = {}
        self._closed = False

    def connection(self) -> http.client.HTTPConnection:
        kind = (
            http.client.HTTPSConnection
            if self.endpoint.scheme == "https"
            else http.client.HTTPConnection
        )
        return kind(self.endpoint.netloc, timeout=self.timeout_s)

    def begin(self, record: dict) -> int:
        with self._lock:
            self._requests += 1
            self._in_flight[self._requests] = {"seq": self._requests, **record}
            return self._requests

    def finish(self, seq: int, reply: dict | None) -> None:
        with self._lock:
            record = self._in_flight.pop(seq, None)
            if record is not None and not self._closed:
                self._write({**record, "reply": reply})

    def close_log(self) -> None:
        """Requests still unanswered when the run ends are kept, with no reply, in order."""
        with self._lock:
            for seq in sorted(self._in_flight):
                self._write({**self._in_flight[seq], "reply": None})
            self._in_flight.clear()
            self._closed = True

    def _write(self, record: dict) -> None:
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(line)


class ReplySummary:
    """What the log keeps of a reply: its status, the usage the provider stated, its error."""

    def __init__(self, api, status: int, content_type: str, secrets: list[str]):
        self.api = api
        self.status = status
        self.streamed = content_type.startswith("text/event-stream")
        self.secrets = secrets
        self.usage: dict = {}
        self._pending = b""
        self._whole = bytearray()

    def feed(self, chunk: bytes) -> None:
        if not self.streamed:
            if len(self._whole) < WHOLE_REPLY_LIMIT:
                self._whole += chunk
            return
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            self._read_event_line(line)

    def _read_event_line(self, line: bytes) -> None:
        if line.startswith(b"data:"):
            self._count(line[5:].strip())

    def _count(self, data: bytes) -> dict | None:
        try:
            payload = json.loads(data)
        except ValueError:
            return None
        for item in payload if isinstance(payload, list) else [payload]:
            known = self.api is not None and isinstance(item, dict)
            stated = self.api.usage_in(item) if known else None
            self.usage.update(stated or {})  # each API's counts are running totals
        return payload

    def result(self) -> dict:
        self._read_event_line(self._pending)
        payload = None if self.streamed else self._count(bytes(self._whole))
        summary: dict = {"status": self.status}
        if self.usage:
            summary["usage"] = dict(self.usage)
        if self.status >= 400:
            summary["error"] = self._error_text(payload)
        return summary

    def _error_text(self, payload) -> str:
        found = payload.get("error") if isinstance(payload, dict) else None
        message = found.get("message") if isinstance(found, dict) else found
        text = str(message or bytes(self._whole[:ERROR_TEXT_LIMIT]).decode("utf-8", "replace"))
        for secret in self.secrets:
            text = text.replace(secret, "<secret>")
        return text[:ERROR_TEXT_LIMIT]


class ProxyHandler(BaseHTTPRequestHandler):
    server: RecordingProxy

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass  # the JSONL log is the record

    def do_GET(self):
        self._forward("GET")

    def do_POST(self):
        self._forward("POST")

    def do_PUT(self):
        self._forward("PUT")

    def do_DELETE(self):
        self._forward("DELETE")

    def do_PATCH(self):
        self._forward("PATCH")

    def _forward(self, method: str) -> None:
        raw = self._request_body()
        api = wire.wire_for(method, self.path)
        seq = self._begin_record(api, raw) if api is not None else None
        secrets = [v for _, v in self.headers.items() if len(v) >= SHORTEST_SECRET]
        secrets += [self.server.api_key] if self.server.api_key else []
        upstream = self.server.connection()
        summary = None
        try:
            upstream.request(method, self._upstream_path(), body=raw, headers=self._forwarded())
            reply = upstream.getresponse()
            summary = ReplySummary(api, reply.status, reply.getheader("Content-Type", ""), secrets)
            self._pass_back(reply, summary)
        except (OSError, http.client.HTTPException) as error:
            if summary is None:  # nothing went back yet: the harness sees a gateway error
                summary = ReplySummary(api, 502, "", secrets)
                summary.feed(self._send_unreachable(error))
        finally:
            upstream.close()
            if seq is not None:
                self.server.finish(seq, summary.result() if summary else None)

    def _request_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._chunked_body()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _chunked_body(self) -> bytes:
        body = bytearray()
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            body += self.rfile.read(size)
            self.rfile.readline()
        while self.rfile.readline().strip():  # trailers
            pass
        return bytes(body)

    def _begin_record(self, api, raw: bytes) -> int:
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unreadable": f"{len(raw)} bytes that are not JSON"}
        headers = sorted({name.lower() for name in self.headers})
        path = loggable_path(self.path)
        return self.server.begin({"api": api.NAME, "path": path, "body": body, "headers": headers})

    def _upstream_path(self) -> str:
        return self._with_key(self.server.endpoint.path.rstrip("/") + self.path)

    def _forwarded(self) -> dict[str, str]:
        headers = {
            k: self._with_key(v) for k, v in self.headers.items() if k.lower() not in NOT_FORWARDED
        }
        headers["Accept-Encoding"] = "identity"
        return headers

    def _with_key(self, text: str) -> str:
        key = self.server.api_key
        return text.replace(PLACEHOLDER_KEY, key) if key else text

    def _pass_back(self, reply: http.client.HTTPResponse, summary: ReplySummary) -> None:
        self.send_response_only(reply.status, reply.reason)
        for name, value in reply.getheaders():
            if name.lower() not in NOT_RETURNED:
                self.send_header(name, value)
        self.end_headers()
        while chunk := reply.read1(65536):
            self.wfile.write(chunk)
            self.wfile.flush()
            summary.feed(chunk)

    def _send_unreachable(self, error: Exception) -> bytes:
        """A gateway error to the harness; returns the body, which the log keeps too."""
        message = (
            f"agentab's recording proxy could not reach {self.server.endpoint.geturl()}: {error}"
        )
        data = json.dumps({"error": {"message": message}}).encode()
        try:
            self.send_response(502)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the harness has gone too
        return data


@contextmanager
def recording(
    endpoint: str, log_path: Path, timeout_s: float, api_key: str | None = None
) -> Iterator[str]:
    """A recording proxy to `endpoint` for the length of a `with` block; yields its base URL.
    `api_key` replaces `PLACEHOLDER_KEY` in every request it forwards."""
    proxy = RecordingProxy(endpoint, log_path, timeout_s, api_key)
    try:
        with serving(proxy, "recording-proxy") as base_url:
            yield base_url
    finally:
        proxy.close_log()


def refuse_a_run_never_answered(log_path: Path, endpoint: str) -> None:
    """A HarnessFault when the run sent requests and not one got a reply: the provider, not the
    agent, failed (an endpoint that accepts the connection and never answers), so the run is
    no outcome to measure, whatever the harness made of it (its timeout, its own error)."""
    replies = []
    try:
        with Path(log_path).open(encoding="utf-8") as log:
            replies = [json.loads(line).get("reply") for line in log if line.strip()]
    except (OSError, ValueError, AttributeError):
        return  # an unreadable log proves nothing either way
    if replies and all(reply is None for reply in replies):
        count = len(replies)
        raise HarnessFault(
            f"no reply from {endpoint}: {count} request{'s' * (count != 1)} sent, none answered "
            "before the run ended (the endpoint accepted the connection and never answered); "
            "a provider fault, not the agent's outcome"
        )
