"""The recording proxy: requests reach the provider as sent, replies come back byte for byte
(streamed events included), and the log holds what the receipt needs and no header value."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import anthropic
import pytest

from agentab.budget.costs import stated_usage
from agentab.errors import AgentabError
from agentab.harnesses.base import HarnessFault, StreamFacts
from agentab.offline_model import serve
from agentab.run.agent_run import fill_unreported_usage
from agentab.run.recording_proxy import (
    PLACEHOLDER_KEY,
    endpoint_for,
    loggable_path,
    recording,
    refuse_a_run_never_answered,
)

KEY = "sk-ant-test-0123456789abcdefghij"

# An Anthropic stream as a provider sends it, cut into pieces that end mid-line.
EVENTS = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":'
    b'"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,'
    b'"usage":{"input_tokens":120,"output_tokens":1,"cache_read_input_tokens":30}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"h\xc3\xa9llo"}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":9}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
PIECES = [EVENTS[i : i + 97] for i in range(0, len(EVENTS), 97)]


class Provider(BaseHTTPRequestHandler):
    """A provider that streams EVENTS in pieces, or answers with an error echoing the key."""

    received: list[tuple[str, dict, bytes]] = []

    def log_message(self, format, *args):  # noqa: A002
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Provider.received.append((self.path, dict(self.headers), body))
        if b'"fail"' in body:
            key = self.headers.get("x-api-key", "")
            data = json.dumps({"error": {"message": f"invalid x-api-key {key}"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("request-id", "req_1")
        self.end_headers()
        for piece in PIECES:
            self.wfile.write(piece)
            self.wfile.flush()
            time.sleep(0.005)


@pytest.fixture
def provider():
    Provider.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def post(base_url: str, path: str, body: dict, headers: dict | None = None):
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.netloc, timeout=10)
    data = json.dumps(body).encode()
    sent = {"Content-Type": "application/json", "x-api-key": PLACEHOLDER_KEY, **(headers or {})}
    connection.request("POST", path, body=data, headers=sent)
    reply = connection.getresponse()
    return reply, reply.read()


def log_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_streamed_reply_comes_back_byte_for_byte_and_its_usage_is_logged(tmp_path, provider):
    log = tmp_path / "model-requests.jsonl"
    body = {"model": "claude-x", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with recording(provider, log, 10, KEY) as url:
        reply, data = post(url, "/v1/messages?beta=true", body)
    assert reply.status == 200 and reply.getheader("request-id") == "req_1"
    assert data == EVENTS
    path, headers, forwarded = Provider.received[0]
    assert path == "/v1/messages?beta=true" and json.loads(forwarded) == body
    assert headers["x-api-key"] == KEY  # the key reaches the provider
    [line] = log_lines(log)
    assert line["seq"] == 1 and line["api"] == "anthropic-messages"
    assert line["body"] == body and "x-api-key" in line["headers"]
    assert line["reply"] == {
        "status": 200,
        "usage": {"input": 120, "output": 9, "cache_read": 30},
    }
    assert KEY not in log.read_text()


def test_an_error_echoing_the_key_is_passed_back_and_logged_without_it(tmp_path, provider):
    log = tmp_path / "model-requests.jsonl"
    with recording(provider, log, 10, KEY) as url:
        reply, data = post(url, "/v1/messages", {"model": "claude-x", "fail": True})
    assert reply.status == 401 and b"invalid x-api-key <secret>" in data  # the key masked
    [line] = log_lines(log)
    assert line["reply"]["status"] == 401
    assert line["reply"]["error"] == "invalid x-api-key <secret>"
    assert KEY not in log.read_text()


def test_a_key_in_the_query_string_is_blanked():
    path = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse&key=AIzaSECRET"
    assert (
        loggable_path(path) == "/v1beta/models/gemini-x:streamGenerateContent?alt=sse&key=<secret>"
    )


def test_an_unreachable_provider_is_a_gateway_error_to_the_harness_and_in_the_log(tmp_path):
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{spare.getsockname()[1]}"
    log = tmp_path / "model-requests.jsonl"
    with recording(closed, log, 10) as url:
        reply, data = post(url, "/v1/messages", {"model": "claude-x"})
    assert reply.status == 502 and b"could not reach" in data
    [line] = log_lines(log)
    assert line["reply"]["status"] == 502 and "could not reach" in line["reply"]["error"]


def test_a_request_unanswered_when_the_run_ends_is_kept_with_no_reply(tmp_path):
    hang = tmp_path / "hang.jsonl"
    log = tmp_path / "model-requests.jsonl"
    with serve("hang", 1, hang) as stand_in, recording(stand_in, log, 30) as url:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": []}
        threading.Thread(
            target=lambda: post(url, "/v1/chat/completions", body), daemon=True
        ).start()
        deadline = time.monotonic() + 10
        while not hang.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    [line] = log_lines(log)
    assert line["api"] == "openai-chat" and line["reply"] is None
    with pytest.raises(HarnessFault, match="no reply from http://x: 1 request sent, none"):
        refuse_a_run_never_answered(log, "http://x")
    refused = {"seq": 2, "forwarded": False, "reply": {"status": 403, "error": "not a model"}}
    log.write_text(log.read_text() + json.dumps(refused) + "\n")  # the proxy's own answer
    with pytest.raises(HarnessFault, match="1 request sent, none"):
        refuse_a_run_never_answered(log, "http://x")


def test_a_run_with_one_reply_or_no_request_is_not_a_provider_fault(tmp_path):
    log = tmp_path / "model-requests.jsonl"
    log.write_text('{"seq": 1, "reply": {"status": 200}}\n{"seq": 2, "reply": null}\n')
    refuse_a_run_never_answered(log, "http://x")  # the provider answered once: an outcome
    log.write_text("")
    refuse_a_run_never_answered(log, "http://x")  # no request: the harness's own affair


def test_the_anthropic_sdk_works_through_the_proxy_streaming_and_not(tmp_path):
    upstream_log = tmp_path / "offline.jsonl"
    log = tmp_path / "model-requests.jsonl"
    with serve("echo", 1, upstream_log) as stand_in, recording(stand_in, log, 30, KEY) as url:
        client = anthropic.Anthropic(api_key=PLACEHOLDER_KEY, base_url=url, max_retries=0)
        ask = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "ping"}]}
        whole = client.messages.create(**ask)
        with client.messages.stream(**ask) as stream:
            streamed = stream.get_final_message()
    assert whole.content and streamed.content
    lines = log_lines(log)
    assert [line["body"]["messages"] for line in lines] == [ask["messages"]] * 2
    assert all(line["reply"]["usage"]["input"] > 0 for line in lines)
    assert stated_usage(log)["output"] == sum(line["reply"]["usage"]["output"] for line in lines)
    assert KEY not in log.read_text()


def test_tokens_and_cost_come_from_the_provider_where_the_harness_said_none(tmp_path):
    log = tmp_path / "model-requests.jsonl"
    replies = [{"status": 200, "usage": {"input": 10, "output": 3, "cost_usd": 0.25}}] * 2
    log.write_text("".join(json.dumps({"seq": 1, "reply": r}) + "\n" for r in replies))
    silent = StreamFacts()
    fill_unreported_usage(silent, log)
    assert silent.tokens["input"] == 20 and silent.tokens["output"] == 6
    assert silent.cost_usd == 0.5
    reported = StreamFacts(cost_usd=1.0)
    reported.tokens["input"] = 99
    fill_unreported_usage(reported, log)
    assert reported.tokens["input"] == 99 and reported.cost_usd == 1.0  # the harness's own word


def test_a_provider_with_no_known_endpoint_is_a_config_error():
    assert endpoint_for("anthropic", {}) == "https://api.anthropic.com"
    assert endpoint_for("anthropic", {"anthropic": "http://127.0.0.1:9/"}) == "http://127.0.0.1:9"
    with pytest.raises(AgentabError, match=r"(?s)provider_endpoints.*fix: add"):
        endpoint_for("acme", {})
