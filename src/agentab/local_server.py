"""An HTTP server on 127.0.0.1 for the length of one run: the offline model, a recording proxy.

Each answers in a thread of the step while the harness runs, and must stop the moment the run
ends: `serve_forever` notices a `shutdown()` only at its next poll (half a second by default),
and that wait would be paid by every run.
"""

from __future__ import annotations

import os
import selectors
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer


class LocalServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler, port: int = 0):
        super().__init__(("127.0.0.1", port), handler)
        # Set once the server stops: handlers that wait (a policy that never answers) end too.
        self.stopping = threading.Event()
        self._wake_up_reader, self._wake_up_writer = os.pipe()

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

    def stop(self) -> None:
        self.stopping.set()
        os.write(self._wake_up_writer, b"\0")

    def server_close(self) -> None:
        super().server_close()
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
