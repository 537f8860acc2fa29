"""The recording proxy: what a run sent a real provider, recorded on its way there.

For a run against a real provider the run step starts one proxy on 127.0.0.1 for the length of
the run and points the harness at it, so that its receipt has the requests as they were sent
(docs/receipts.md). The harness holds a placeholder, never the
key, and the proxy is the only way out of the agent's sandbox, so what it forwards is decided
here, not by the agent:

- **Only model requests go on**: a POST of a JSON object to a plain path that a wire API of
  `agentab.offline_model.wire` reads as a model turn. Anything else (another path, a model
  listing, a body that is not JSON) gets a 403 and is logged as refused, so that nothing is
  spent on the key without a trace.
- **The key goes in one place**: the API's own key header (`KEY_HEADER` of its wire module:
  `x-api-key`, `Authorization: Bearer`, `x-goog-api-key`). Every key header the agent sent is
  dropped, and key parameters of the query string are not forwarded: a placeholder is never
  replaced where it stands, so a provider that echoes a path or a header (OpenAI's "Invalid
  URL" error does) echoes nothing secret.
- **No reply carries the key back**: the reply's headers and bytes are masked where they hold
  it (`KeyRedactor`), and a reply in an encoding the proxy cannot read for it is refused.

Each request goes on otherwise as the harness sent it, with `Accept-Encoding: identity`, so that
the proxy can read the usage the provider states. The reply comes back as it arrives, streamed
events included. Each request becomes one line of `model-requests.jsonl`, in the offline model's
format: `seq`, `at`, `origin`, `api`, `path`, `body`, the request's header *names*, and a reply
summary (`status`, `usage`, an error message). Header values are never written. `origin` tells
the harness's requests from those its tools sent (`agentab.offline_model.origin`): the proxy
reads the tool calls of each reply to a harness's request before the harness can run them.
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
from agentab.offline_model.local_server import (
    DEFAULT_LOG_CAP,
    BodyTooLarge,
    LocalServer,
    read_body,
    refusal_record,
    send_refusal,
    serving,
)
from agentab.offline_model.origin import HARNESS, ToolCallWatch, arrival_time
from agentab.run.proxy_replies import WHOLE_REPLY_LIMIT, KeyRedactor, ReplySummary, masked

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
# The proxy frames the body it passes back itself (it may hold a whole reply to read it first).
NOT_RETURNED = frozenset(NOT_FORWARDED | {"server", "date"})
# Every header a provider reads a key from: whatever the agent put there is not forwarded.
KEY_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key"})
KEY_PARAMETERS = frozenset({"key", "api_key", "apikey", "access_token"})
SECRET_QUERY = re.compile(r"((?:^|[?&])(?:key|api_key|apikey|access_token)=)[^&]*", re.I)
# A path segment as harnesses write them: no `.` or `..`, no empty segment, no %-escape that a
# provider's router might read differently from this check.
PLAIN_SEGMENT = re.compile(r"[A-Za-z0-9_~:@!$'()*+,;=-][A-Za-z0-9._~:@!$'()*+,;=-]*")
REFUSED_BODY_LIMIT = 64 * 1024  # a refused body is logged whole up to this, else by its size
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
                f"add `provider_endpoints: {{{provider}: https://…}}` (the API's origin), or, "
                f"for a server of your own, declare it in the scenario as [providers.{provider}] "
                "(docs/local-models.md)",
            )
        )
    return endpoint.rstrip("/")


def loggable_path(path: str) -> str:
    return SECRET_QUERY.sub(r"\1<secret>", path)


def without_key_parameters(path: str) -> str:
    """The path with every key parameter of its query left out: the key travels in its header."""
    bare, mark, query = path.partition("?")
    if not mark:
        return path
    kept = [p for p in query.split("&") if p.split("=", 1)[0].lower() not in KEY_PARAMETERS]
    return f"{bare}?{'&'.join(kept)}" if kept else bare


def is_plain_path(path: str) -> bool:
    segments = path.split("?", 1)[0].split("/")
    return segments[0] == "" and all(PLAIN_SEGMENT.fullmatch(s) for s in segments[1:])


def model_request(method: str, path: str, body) -> tuple[object | None, str]:
    """The wire API of a request the proxy forwards, or None and why it is refused."""
    api = wire.wire_for(method, path)
    if api is None or not is_plain_path(path):
        names = ", ".join(m.NAME for m in wire.wire_modules())
        return (
            None,
            f"{method} {loggable_path(path)} is not a model request of an API it knows ({names})",
        )
    if not isinstance(body, dict):
        return None, "its body is not a JSON object, as a model request's is"
    return api, ""


# What the harness holds instead of the provider's key. The proxy never replaces it where it
# stands: it drops it with every key header and puts the real key in the API's own.
PLACEHOLDER_KEY = "agentab-placeholder-key"


class RecordingProxy(LocalServer):
    def __init__(
        self,
        endpoint: str,
        log_path: Path,
        timeout_s: float,
        api_key: str | None = None,
        log_cap: int = DEFAULT_LOG_CAP,
    ):
        super().__init__(ProxyHandler, log_cap=log_cap)
        self.api_key = api_key
        self.endpoint = urlsplit(endpoint)
        self.timeout_s = timeout_s
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.touch()
        self._lock = threading.Lock()
        self._requests = 0
        self._in_flight: dict[int, dict] = {}
        self._begun: dict[int, ReplySummary] = {}  # in flight, their reply begun
        self._closed = False
        self.tool_calls = ToolCallWatch()

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

    def replying(self, seq: int, summary: ReplySummary) -> None:
        """The provider's reply to `seq` has begun: its status and headers came."""
        with self._lock:
            if seq in self._in_flight:
                self._begun[seq] = summary

    def finish(self, seq: int, reply: dict | None) -> None:
        with self._lock:
            self._begun.pop(seq, None)
            record = self._in_flight.pop(seq, None)
            if record is not None and not self._closed:
                self._write({**record, "reply": reply})

    def refused(self, record: dict, reply: dict) -> None:
        """A request that was not forwarded: logged at once, with the refusal as its reply."""
        seq = self.begin(record)
        self.finish(seq, reply)

    def close_log(self) -> None:
        """Requests still unanswered when the run ends are kept, with no reply, in order. One
        whose reply had begun (a real model writing slowly, or without end, when the run's
        timeout came) was answered: it is kept with its status and `cut`, and the run is the
        agent's outcome, not a provider that never answered."""
        with self._lock:
            for seq in sorted(self._in_flight):
                begun = self._begun.get(seq)
                reply = None if begun is None else {"status": begun.status, "cut": True}
                self._write({**self._in_flight[seq], "reply": reply})
            self._in_flight.clear()
            self._begun.clear()
            self._closed = True

    def _write(self, record: dict) -> None:
        line = self.log_line(record)
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(line)


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
        arrived = arrival_time()
        try:
            raw = read_body(self)
        except BodyTooLarge as error:  # never forwarded, never read whole: said in the log
            record = refusal_record(error, loggable_path(self.path), arrived)
            reply = record.pop("reply")
            self.server.refused({**record, "method": method, "forwarded": False}, reply)
            send_refusal(self, error)
            return
        body = parsed_json(raw)
        api, refusal = model_request(method, self.path, body)
        origin = self.server.tool_calls.origin(api, body)
        self._arrival = {"at": arrived, "origin": origin}
        if api is None:
            self._refuse(method, raw, body, refusal)
            return
        seq = self.server.begin(self._record(api.NAME, body))
        self._head_sent = False
        self._from_harness = origin == HARNESS
        secrets = [v for _, v in self.headers.items() if len(v) >= SHORTEST_SECRET]
        secrets += [self.server.api_key] if self.server.api_key else []
        upstream = self.server.connection()
        summary = None
        try:
            upstream.request(method, self._upstream_path(), body=raw, headers=self._forwarded(api))
            reply = upstream.getresponse()
            summary = ReplySummary(api, reply.status, reply.getheader("Content-Type", ""), secrets)
            self.server.replying(seq, summary)
            encoding = (reply.getheader("Content-Encoding") or "identity").strip().lower()
            if encoding != "identity":
                raise http.client.HTTPException(
                    f"the reply is encoded as {encoding!r} (asked for identity), which the proxy "
                    "cannot read for the key, so it is not passed on"
                )
            self._pass_back(reply, summary)
        except (OSError, http.client.HTTPException) as error:
            if not self._head_sent:  # nothing went back yet: the harness sees a gateway error
                summary = ReplySummary(api, 502, "", secrets)
                summary.feed(self._send_error(502, self._unreachable(error, secrets)))
        finally:
            upstream.close()
            self.server.finish(seq, summary.result() if summary else None)

    def _record(self, api_name: str | None, body) -> dict:
        headers = sorted({name.lower() for name in self.headers})
        path = loggable_path(self.path)
        return {**self._arrival, "api": api_name, "path": path, "body": body, "headers": headers}

    def _refuse(self, method: str, raw: bytes, body, refusal: str) -> None:
        """A 403 to anything that is not a model request, and a line in the log that says so."""
        message = f"agentab's recording proxy forwards only model requests: {refusal}"
        if body is None or len(raw) > REFUSED_BODY_LIMIT:
            body = {
                "unreadable": f"{len(raw)} bytes" + (" that are not JSON" if body is None else "")
            }
        record = {**self._record(None, body), "method": method, "forwarded": False}
        self.server.refused(record, {"status": 403, "error": message})
        self._send_error(403, message)

    def _upstream_path(self) -> str:
        return self.server.endpoint.path.rstrip("/") + without_key_parameters(self.path)

    def _forwarded(self, api) -> dict[str, str]:
        """The harness's headers, less the connection's, less every key header; and the key in
        the one header its API reads it from."""
        headers = {
            name: value
            for name, value in self.headers.items()
            if name.lower() not in NOT_FORWARDED | KEY_HEADERS
        }
        headers["Accept-Encoding"] = "identity"
        if self.server.api_key:
            name, value = api.KEY_HEADER
            headers[name] = value.format(key=self.server.api_key)
        return headers

    def _pass_back(self, reply: http.client.HTTPResponse, summary: ReplySummary) -> None:
        redactor = KeyRedactor(self.server.api_key)
        if summary.streamed:
            self._send_head(reply, None)
            while chunk := reply.read1(65536):
                summary.feed(chunk)
                self._watch_calls(summary)
                self._send_body(redactor.feed(chunk))
        else:
            held, whole = read_up_to_limit(reply, summary)
            if whole:  # read before it is passed on, and its length known
                summary.read_whole()
                self._watch_calls(summary)
                held = redactor.feed(held) + redactor.flush()
                self._send_head(reply, len(held))
                self._send_body(held)
                return
            self._send_head(reply, None)  # too long to hold: passed on as it comes, unread
            self._send_body(redactor.feed(held))
            while chunk := reply.read1(65536):
                self._send_body(redactor.feed(chunk))
        self._send_body(redactor.flush())

    def _watch_calls(self, summary: ReplySummary) -> None:
        """The tool calls a reply to the harness asks for run from now on: known before the
        harness gets the bytes that ask for them."""
        if self._from_harness:
            self.server.tool_calls.asked(summary.calls)

    def _send_head(self, reply: http.client.HTTPResponse, length: int | None) -> None:
        key = [self.server.api_key] if self.server.api_key else []
        self.send_response_only(reply.status, reply.reason)
        for name, value in reply.getheaders():
            if name.lower() not in NOT_RETURNED:
                self.send_header(name, masked(value, key))
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        self._head_sent = True

    def _send_body(self, data: bytes) -> None:
        if data:
            self.wfile.write(data)
            self.wfile.flush()

    def _unreachable(self, error: Exception, secrets: list[str]) -> str:
        reached = self.server.endpoint.geturl()
        return masked(f"agentab's recording proxy could not reach {reached}: {error}", secrets)

    def _send_error(self, status: int, message: str) -> bytes:
        """An error of the proxy's own to the harness; returns the body, which the log keeps."""
        data = json.dumps({"error": {"message": message}}).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the harness has gone too
        return data


def read_up_to_limit(reply: http.client.HTTPResponse, summary: ReplySummary) -> tuple[bytes, bool]:
    """A reply's bytes up to WHOLE_REPLY_LIMIT, and whether that is the whole reply."""
    held = bytearray()
    while len(held) <= WHOLE_REPLY_LIMIT:
        chunk = reply.read1(65536)
        if not chunk:
            return bytes(held), True
        held += chunk
        summary.feed(chunk)
    return bytes(held), False


def parsed_json(raw: bytes):
    """The body as JSON, or None when it is not JSON (an empty body is an empty object)."""
    try:
        return json.loads(raw or b"{}")
    except ValueError:
        return None


@contextmanager
def recording(
    endpoint: str,
    log_path: Path,
    timeout_s: float,
    api_key: str | None = None,
    log_cap: int = DEFAULT_LOG_CAP,
) -> Iterator[str]:
    """A recording proxy to `endpoint` for the length of a `with` block; yields its base URL.
    `api_key` replaces `PLACEHOLDER_KEY` in every request it forwards; its request log is
    capped at `log_cap` bytes (a run's: its disk)."""
    proxy = RecordingProxy(endpoint, log_path, timeout_s, api_key, log_cap)
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
            lines = [json.loads(line) for line in log if line.strip()]
        # What the proxy refused itself never reached the provider: it proves nothing of it.
        replies = [line.get("reply") for line in lines if line.get("forwarded", True)]
    except (OSError, ValueError, AttributeError):
        return  # an unreadable log proves nothing either way
    if replies and all(reply is None for reply in replies):
        count = len(replies)
        raise HarnessFault(
            f"no reply from {endpoint}: {count} request{'s' * (count != 1)} sent, none answered "
            "before the run ended (the endpoint accepted the connection and never answered); "
            "a provider fault, not the agent's outcome"
        )
