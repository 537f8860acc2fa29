"""The recording proxy is the agent's only way out, and the key's: the key goes in one header of
the API's own, only model requests go on (anything else gets a 403, logged), every forwarded
request is logged, and no reply or log carries the key back. Tried against an upstream that
echoes everything it got (path, headers, body) in its reply, as a provider's error does."""

from __future__ import annotations

import gzip
import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import anthropic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentab.run.proxy_replies import KeyRedactor
from agentab.run.recording_proxy import PLACEHOLDER_KEY, recording

KEY = "sk-real-7d1c0e9b5a3f4e2d8c6b"


class Echo(BaseHTTPRequestHandler):
    """An upstream that answers every request with all it received: as JSON (status 404, as
    OpenAI's "Invalid URL" error), as server-sent events cut into 5-byte pieces (so that an
    echoed key spans pieces), or gzip-encoded; and each request header as a reply header."""

    received: list[dict] = []

    def log_message(self, format, *args):  # noqa: A002
        pass

    def do_GET(self):
        self._echo()

    def do_POST(self):
        self._echo()

    def _echo(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        seen = {"path": self.path, "headers": dict(self.headers), "body": body.decode()}
        Echo.received.append(seen)
        data = json.dumps({"error": {"message": f"Invalid URL: {json.dumps(seen)}"}}).encode()
        streamed = b'"stream": true' in body
        self.send_response(200 if streamed else 404)
        for name, value in self.headers.items():
            self.send_header(f"x-echo-{name}", value)
        if b'"gzip"' in body:
            data = gzip.compress(data)
            self.send_header("Content-Encoding", "gzip")
        if streamed:
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for start in range(0, len(data), 5):
                self.wfile.write(data[start : start + 5])
                self.wfile.flush()
            self.wfile.write(b"\n\n")
            return
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def upstream():
    Echo.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def send(base_url: str, method: str, path: str, body: bytes, headers: dict):
    connection = http.client.HTTPConnection(urlsplit(base_url).netloc, timeout=10)
    connection.request(method, path, body=body, headers=headers)
    reply = connection.getresponse()
    return reply, reply.read()


# The agent writes the placeholder everywhere it can: in the path, the query, every key header
# and a header of its own.
EVERYWHERE = {
    "Content-Type": "application/json",
    "x-api-key": PLACEHOLDER_KEY,
    "Authorization": f"Bearer {PLACEHOLDER_KEY}",
    "x-goog-api-key": PLACEHOLDER_KEY,
    "x-mine": PLACEHOLDER_KEY,
}
MODEL_PATHS = [
    ("/v1/messages?beta=true", "x-api-key", KEY),
    ("/v1/chat/completions", "Authorization", f"Bearer {KEY}"),
    ("/openai/v1/chat/completions", "Authorization", f"Bearer {KEY}"),
    ("/v1/responses", "Authorization", f"Bearer {KEY}"),
    ("/v1beta/models/gemini-x:streamGenerateContent?alt=sse", "x-goog-api-key", KEY),
]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(("path", "header", "value"), MODEL_PATHS)
def test_the_key_travels_in_the_apis_own_header_only_and_never_comes_back(
    tmp_path, upstream, path, header, value, streamed
):
    log = tmp_path / "model-requests.jsonl"
    body = json.dumps({"model": "m", "stream": streamed, "messages": []}).encode()
    with recording(upstream, log, 10, KEY) as url:
        reply, data = send(url, "POST", f"{path}{'&' if '?' in path else '?'}key={PLACEHOLDER_KEY}",
                           body, EVERYWHERE)  # fmt: skip
    [seen] = Echo.received
    holding_key = {name.lower(): v for name, v in seen["headers"].items() if KEY in v}
    assert holding_key == {header.lower(): value}  # one header, the API's own
    assert KEY not in seen["path"] and "key=" not in seen["path"]  # the query's key is not sent
    assert seen["path"].startswith(path)  # the rest as the harness sent it
    # The upstream echoed it all back: nothing of it holds the key, headers included.
    assert KEY.encode() not in data and len(data) > len(body)
    assert all(KEY not in v for v in reply.headers.values())
    assert b"<secret>" in data
    [line] = [json.loads(text) for text in log.read_text().splitlines()]
    assert line["reply"]["status"] == (200 if streamed else 404)
    assert KEY not in log.read_text()


REFUSED = [
    ("GET", "/v1/models", b""),
    ("POST", "/v1/files", b"{}"),
    ("POST", "/v1/organizations/usage", b"{}"),
    ("POST", "/v1/x/../messages", b"{}"),
    ("POST", "/v1//messages", b"{}"),
    ("POST", "/v1/%6d/messages", b"{}"),
    ("POST", "/v1/messages", b"not json"),
    ("POST", "/v1/messages", b"[1, 2]"),
    ("DELETE", "/v1/messages", b"{}"),
]


@pytest.mark.parametrize(("method", "path", "body"), REFUSED)
def test_anything_but_a_model_request_is_refused_and_logged(tmp_path, upstream, method, path, body):
    log = tmp_path / "model-requests.jsonl"
    with recording(upstream, log, 10, KEY) as url:
        reply, data = send(url, method, path, body, EVERYWHERE)
    assert reply.status == 403 and b"forwards only model requests" in data
    assert Echo.received == []  # never reached the provider
    [line] = [json.loads(text) for text in log.read_text().splitlines()]
    assert line["forwarded"] is False and line["method"] == method and line["path"] == path
    assert line["api"] is None and line["reply"]["status"] == 403
    assert "x-api-key" in line["headers"] and PLACEHOLDER_KEY not in json.dumps(line["headers"])


def seq_of(line: dict) -> int:
    return line["seq"]


def test_every_forwarded_request_is_logged_and_refusals_apart(tmp_path, upstream):
    log = tmp_path / "model-requests.jsonl"
    with recording(upstream, log, 10, KEY) as url:
        for number in range(3):
            send(url, "POST", "/v1/chat/completions", json.dumps({"n": number}).encode(), {})
            send(url, "GET", "/v1/models", b"", {})
    # A line is written once its reply is sent, so a quick refusal may be written before the
    # request ahead of it: `seq` is the order the requests came in.
    lines = sorted((json.loads(text) for text in log.read_text().splitlines()), key=seq_of)
    forwarded = [line for line in lines if line.get("forwarded", True)]
    assert len(Echo.received) == len(forwarded) == 3
    assert [line["body"] for line in forwarded] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert [line["seq"] for line in lines] == list(range(1, 7))


def test_a_reply_in_an_encoding_the_proxy_cannot_read_is_not_passed_on(tmp_path, upstream):
    log = tmp_path / "model-requests.jsonl"
    body = json.dumps({"model": "m", "gzip": True}).encode()
    with recording(upstream, log, 10, KEY) as url:
        reply, data = send(url, "POST", "/v1/messages", body, {"Content-Type": "application/json"})
    assert reply.status == 502 and b"encoded as 'gzip'" in data
    assert KEY.encode() not in data and KEY.encode() not in gzip.decompress(gzip.compress(data))
    [line] = [json.loads(text) for text in log.read_text().splitlines()]
    assert line["reply"]["status"] == 502 and "gzip" in line["reply"]["error"]


def test_the_anthropic_sdk_holding_the_placeholder_reaches_the_provider_with_the_key(
    tmp_path, upstream
):
    log = tmp_path / "model-requests.jsonl"
    with recording(upstream, log, 10, KEY) as url:
        client = anthropic.Anthropic(api_key=PLACEHOLDER_KEY, base_url=url, max_retries=0)
        with pytest.raises(anthropic.NotFoundError) as raised:
            client.messages.create(
                model="claude-x", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
            )
    [seen] = Echo.received
    assert seen["headers"]["x-api-key"] == KEY and "Authorization" not in seen["headers"]
    assert "<secret>" in str(raised.value) and KEY not in str(raised.value)  # echoed, masked
    assert KEY not in log.read_text()


@given(
    before=st.binary(max_size=60),
    after=st.binary(max_size=60),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
)
def test_a_key_is_masked_wherever_the_pieces_of_a_reply_cut_it(before, after, cuts):
    key = KEY.encode()
    whole = before + key + after + key[:7] + key
    redactor = KeyRedactor(KEY)
    points = sorted({min(cut, len(whole)) for cut in cuts})
    pieces = [whole[a:b] for a, b in zip([0, *points], [*points, len(whole)], strict=True)]
    out = b"".join(redactor.feed(piece) for piece in pieces) + redactor.flush()
    assert out == whole.replace(key, redactor.mask) and key not in out
    assert len(out) == len(whole)  # a Content-Length stays true


def test_a_piece_that_cannot_start_the_key_is_not_held_back():
    redactor = KeyRedactor(KEY)
    assert redactor.feed(b"data: {}\n\n") == b"data: {}\n\n"
    assert redactor.feed(b"data: sk-re") == b"data: "
    assert redactor.feed(b"x\n\n") == b"sk-rex\n\n"
