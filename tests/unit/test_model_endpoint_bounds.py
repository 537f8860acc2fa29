"""The run's model endpoint (the offline model, the recording proxy) bounds what it reads and
logs: a body over the bound is refused before it is read, the log is capped, and both are said
in the log so that the run is failed at its limit rather than dropped."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agentab.offline_model import serve
from agentab.offline_model.local_server import MAX_REQUEST_BYTES, over_bound_in
from agentab.run.recording_proxy import recording

HUGE = 161 * 1024 * 1024


def send_raw(base_url: str, head: str, body: bytes = b"") -> bytes:
    """A request whose head declares what it likes; its reply, read with a short timeout: a
    server that waits for the whole declared body never answers."""
    parts = urlsplit(base_url)
    host, port = parts.hostname, parts.port
    with socket.create_connection((host, port), timeout=5) as connection:
        connection.sendall(head.encode() + b"\r\n" + body)
        reply = b""
        try:
            while chunk := connection.recv(65536):
                reply += chunk
        except TimeoutError:
            pass
    return reply


def declared(length: int) -> str:
    return (
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n"
    )


def chunked_over_bound() -> tuple[str, bytes]:
    head = (
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n"
    )
    return head, f"{MAX_REQUEST_BYTES + 1:x}\r\n".encode() + b"{" * 1000


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_the_offline_model_refuses_a_body_over_the_bound_before_reading_it(tmp_path, chunked):
    log = tmp_path / "model-requests.jsonl"
    head, body = chunked_over_bound() if chunked else (declared(HUGE), b"{" * 1000)
    with serve("echo", 1, log) as url:
        reply = send_raw(url, head, body)
    assert reply.startswith(b"HTTP/1.0 413") or reply.startswith(b"HTTP/1.1 413")
    (line,) = [json.loads(text) for text in log.read_text().splitlines()]
    assert line["reply"]["status"] == 413 and line["over_bound"] is True
    assert over_bound_in(log)


def test_the_recording_proxy_refuses_a_body_over_the_bound_and_forwards_nothing(tmp_path):
    log, upstream_log = tmp_path / "proxy.jsonl", tmp_path / "upstream.jsonl"
    with serve("echo", 1, upstream_log) as stand_in, recording(stand_in, log, 10) as url:
        reply = send_raw(url, declared(HUGE), b"{" * 1000)
    assert b" 413 " in reply.split(b"\r\n", 1)[0]
    (line,) = [json.loads(text) for text in log.read_text().splitlines()]
    assert line["forwarded"] is False and line["over_bound"] is True
    assert upstream_log.read_text() == ""


def test_past_the_logs_cap_a_request_keeps_no_body_and_says_so(tmp_path):
    log = tmp_path / "model-requests.jsonl"
    request = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x" * 4000}]}
    data = json.dumps(request).encode()
    with serve("echo", 1, log, log_cap=6000) as url:
        for _ in range(3):
            send_raw(url, declared(len(data)) + "Connection: close\r\n", data)
    lines = [json.loads(text) for text in log.read_text().splitlines()]
    assert len(lines) == 3 and log.stat().st_size < 6000 + 2 * 1000
    assert "not_kept" not in lines[0]["body"] and lines[-1]["body"].keys() == {"not_kept"}
    assert over_bound_in(log)


def test_a_log_within_its_bounds_has_none_over_them(tmp_path):
    log: Path = tmp_path / "model-requests.jsonl"
    log.write_text(json.dumps({"body": {"over_bound": True}, "api": "x"}) + "\n")
    assert not over_bound_in(log)  # a body the agent wrote cannot claim it
