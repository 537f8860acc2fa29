"""The local server a run's model and proxy answer from: it stops at once, but only once its
handlers have finished what they were doing."""

from __future__ import annotations

import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler

from agentab.offline_model import local_server
from agentab.offline_model.local_server import LocalServer, serving


class RepliesFirst(BaseHTTPRequestHandler):
    """Like the recording proxy: the reply goes out whole, then the handler goes on."""

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
        self.wfile.flush()
        self.after_the_reply()

    def after_the_reply(self) -> None:
        raise NotImplementedError


class RecordsAfterReplying(RepliesFirst):
    records: list[str] = []

    def after_the_reply(self) -> None:
        time.sleep(0.3)
        self.records.append(self.path)


class StuckUntilReleased(RepliesFirst):
    """A handler stuck after its reply, as one waiting on a provider that never answers, until
    the test releases it (or for 10 s at most, should closing wait for it anyway)."""

    release = threading.Event()
    finished: list[str] = []

    def after_the_reply(self) -> None:
        self.release.wait(10)
        self.finished.append(self.path)


def serving_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "zq-serving"]


def test_a_handler_finishing_its_record_after_the_reply_is_waited_for():
    RecordsAfterReplying.records = []
    with serving(LocalServer(RecordsAfterReplying), "zq-serving") as url:
        assert urllib.request.urlopen(url + "/first", timeout=5).read() == b"ok"
    assert RecordsAfterReplying.records == ["/first"]
    # It stopped answering: its loop woke up and ended (no poll left it waiting).
    assert serving_threads() == []


def test_a_stuck_handler_is_left_behind_after_the_grace(monkeypatch):
    monkeypatch.setattr(local_server, "HANDLERS_GRACE_S", 0.2)
    StuckUntilReleased.release = threading.Event()
    StuckUntilReleased.finished = []
    try:
        with serving(LocalServer(StuckUntilReleased), "zq-serving") as url:
            assert urllib.request.urlopen(url + "/", timeout=5).read() == b"ok"
        # Closing returned while the handler was still stuck: it was left behind after the
        # grace, not waited for (how long closing takes: benchmarks/bench_stopping.py).
        assert StuckUntilReleased.finished == []
        assert serving_threads() == []
    finally:
        StuckUntilReleased.release.set()
