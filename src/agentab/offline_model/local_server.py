"""An HTTP server on 127.0.0.1 for the length of one run: the offline model, a recording proxy.

Each answers in a thread of the step while the harness runs, and must stop the moment the run
ends: `serve_forever` notices a `shutdown()` only at its next poll (half a second by default),
and that wait would be paid by every run. Its handlers must be done before it is closed, too: a
handler may still be writing its record after the harness has read the last byte of its reply.

What reaches it comes from the run, and is bounded before it is read: a request body over
`MAX_REQUEST_BYTES` is refused (413) from its declared length, or as soon as its chunks pass it,
and never held whole in this process (outside the run's memory cgroup); the request log is
capped (`log_cap`, the run's disk): past it a request's line keeps no body. Either way the line
says so (`"over_bound": true`), and the run is failed at its limit (`over_bound_in`), never
dropped in silence.
"""

from __future__ import annotations

import json
import os
import selectors
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# How long closing waits for handlers still at work: one stuck on a provider that never answers is
# left behind (its thread is a daemon), and its request is logged as unanswered.
HANDLERS_GRACE_S = 2.0
# A model request is a conversation: a long one with images is a few megabytes. Past this, a
# body is the run filling agentab's disk and memory through its endpoint.
MAX_REQUEST_BYTES = 32 * 1024 * 1024
# The request log of a server nobody gave a cap (`python -m agentab.offline_model`).
DEFAULT_LOG_CAP = 1 << 30
OVER_BOUND = "over_bound"


class BodyTooLarge(Exception):
    """A request body over the bound: refused, never read whole."""

    def __init__(self, size: int | None):
        self.size = size
        said = f"{size} bytes" if size is not None else "a chunked body"
        super().__init__(
            f"agentab's model endpoint refuses a request body over {MAX_REQUEST_BYTES} bytes "
            f"({said})"
        )


def read_body(handler: BaseHTTPRequestHandler, limit: int = MAX_REQUEST_BYTES) -> bytes:
    """A request's body, read only within `limit`: its declared length is checked before a byte
    is read, and a chunked body is refused as soon as its chunks pass it (BodyTooLarge)."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        body = bytearray()
        while size := int(handler.rfile.readline(64).split(b";")[0].strip() or b"0", 16):
            if len(body) + size > limit:
                handler.close_connection = True
                raise BodyTooLarge(None)
            body += handler.rfile.read(size)
            handler.rfile.readline(64)
        while handler.rfile.readline(8192).strip():  # trailers
            pass
        return bytes(body)
    try:
        length = int(handler.headers.get("Content-Length") or 0)
    except ValueError:
        length = 0
    if length > limit:
        handler.close_connection = True  # the unread body must not be taken for a request
        raise BodyTooLarge(length)
    return handler.rfile.read(max(0, length))


def refusal_record(error: BodyTooLarge, path: str, arrived: str) -> dict:
    """The log line of a body refused over the bound: what it was, never its bytes."""
    return {
        "at": arrived,
        "api": None,
        "path": path,
        "body": {"refused": str(error)},
        "reply": {"status": 413, "error": str(error)},
        OVER_BOUND: True,
    }


def send_refusal(handler: BaseHTTPRequestHandler, error: BodyTooLarge) -> None:
    data = json.dumps({"error": {"message": str(error)}}).encode()
    handler.send_response(413)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.wfile.write(data)


def over_bound_in(log: Path) -> bool:
    """Whether a request log holds a line written over a bound (a refused body, a body not kept
    past the log's cap)."""
    try:
        with Path(log).open("rb") as lines:
            for line in lines:
                if b'"over_bound"' not in line:
                    continue
                try:
                    if json.loads(line).get(OVER_BOUND) is True:
                        return True
                except (ValueError, AttributeError):
                    continue
    except OSError:
        return False
    return False


class LocalServer(ThreadingHTTPServer):
    # socketserver joins only non-daemon handler threads on close, with no time limit; a daemon
    # thread cannot keep the step alive, so the server keeps its own list and a deadline.
    daemon_threads = True

    def __init__(self, handler, port: int = 0, log_cap: int = DEFAULT_LOG_CAP):
        super().__init__(("127.0.0.1", port), handler)
        self.log_cap = log_cap
        self._logged = 0
        self._log_lock = threading.Lock()
        # Set once the server stops: handlers that wait (a policy that never answers) end too.
        self.stopping = threading.Event()
        self._wake_up_reader, self._wake_up_writer = os.pipe()
        self._handlers: list[threading.Thread] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def serve_until_stopped(self) -> None:
        """Answer requests until `stop()`, which ends this at once."""
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._wake_up_reader, selectors.EVENT_READ)
            while not self.stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is self and not self.stopping.is_set():
                        self.handle_request()  # ready: it accepts without waiting

    def process_request(self, request, client_address) -> None:
        handler = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True
        )
        self._handlers = [thread for thread in self._handlers if thread.is_alive()]
        self._handlers.append(handler)
        handler.start()

    def log_line(self, record: dict) -> str:
        """`record` as a line of the request log, within the log's cap: past it, the line keeps
        no body and says so."""
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        with self._log_lock:
            if self._logged + len(line.encode()) > self.log_cap:
                record = {
                    **record,
                    "body": {"not_kept": f"the request log reached its cap ({self.log_cap} bytes)"},
                    OVER_BOUND: True,
                }
                line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
            self._logged += len(line.encode())
        return line

    def stop(self) -> None:
        self.stopping.set()
        os.write(self._wake_up_writer, b"\0")

    def server_close(self) -> None:
        super().server_close()
        deadline = time.monotonic() + HANDLERS_GRACE_S
        for handler in self._handlers:
            handler.join(timeout=max(0.0, deadline - time.monotonic()))
        for fd in (self._wake_up_reader, self._wake_up_writer):
            os.close(fd)


@contextmanager
def serving(server: LocalServer, name: str) -> Iterator[str]:
    """`server` answering in a thread for the length of a `with` block; yields its base URL.
    Closed at the end."""
    thread = threading.Thread(target=server.serve_until_stopped, name=name, daemon=True)
    thread.start()
    try:
        yield server.base_url
    finally:
        server.stop()
        thread.join(timeout=5)
        server.server_close()
