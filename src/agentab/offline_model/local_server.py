"""An HTTP server on 127.0.0.1 for the length of one run: the offline model, a recording proxy.

Each answers in a thread of the step while the harness runs, and must stop the moment the run
ends: `serve_forever` notices a `shutdown()` only at its next poll (half a second by default),
and that wait would be paid by every run. Its handlers must be done before it is closed, too: a
handler may still be writing its record after the harness has read the last byte of its reply.
"""

from __future__ import annotations

import os
import selectors
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer

# How long closing waits for handlers still at work: one stuck on a provider that never answers is
# left behind (its thread is a daemon), and its request is logged as unanswered.
HANDLERS_GRACE_S = 2.0


class LocalServer(ThreadingHTTPServer):
    # socketserver joins only non-daemon handler threads on close, with no time limit; a daemon
    # thread cannot keep the step alive, so the server keeps its own list and a deadline.
    daemon_threads = True

    def __init__(self, handler, port: int = 0):
        super().__init__(("127.0.0.1", port), handler)
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
