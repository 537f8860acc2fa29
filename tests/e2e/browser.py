"""Headless Chromium (Debian's package) driven through the DevTools protocol over a pipe.

`--remote-debugging-pipe` makes Chromium read protocol messages on its fd 3 and write them on
its fd 4, each a JSON text ended by a NUL byte: no port, no websocket, no library, and nothing
downloaded. A page is opened, its text read as a person sees it (`innerText`), and every
console error, uncaught exception, failed load and request to anything but a local file kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"


class BrowserError(Exception):
    pass


def _above_four(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


@dataclass
class PageVisit:
    url: str
    text: str
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    broken_images: list[str] = field(default_factory=list)


class Chromium:
    def __init__(self, executable: str = CHROMIUM, timeout_s: float = 30):
        if not Path(executable).exists():
            raise BrowserError(
                f"{executable} is missing: apt-get install -y chromium (.ci/run does it)"
            )
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="agentab-chromium-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()
        # Above 4, so that placing them on 3 and 4 in the child never dup2s a fd onto itself
        # (which would keep its close-on-exec flag) or onto the other one.
        to_browser_read = _above_four(to_browser_read)
        from_browser_write = _above_four(from_browser_write)

        def on_fds_3_and_4() -> None:
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        self.process = subprocess.Popen(
            [
                executable,
                "--headless",
                "--remote-debugging-pipe",
                "--no-sandbox",  # root in a container has no user namespace to sandbox with
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                f"--user-data-dir={self.profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=on_fds_3_and_4,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict] = []

    # ------------------------------------------------------------------ protocol

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._events.append(reply)

    def _read(self) -> dict:
        deadline = time.monotonic() + self.timeout_s
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("Chromium did not answer in time")
            chunk = os.read(self._from_browser, 65536)
            if not chunk:
                raise BrowserError("Chromium closed its pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def _wait_for(self, method: str, session: str) -> None:
        for index, event in enumerate(self._events):
            if event.get("method") == method and event.get("sessionId") == session:
                del self._events[index]
                return
        while True:
            event = self._read()
            if event.get("method") == method and event.get("sessionId") == session:
                return
            self._events.append(event)

    # ------------------------------------------------------------------ pages

    def visit(self, url: str, settle_s: float = 0.3) -> PageVisit:
        target, session = self._open(url, ("Page", "Runtime", "Log", "Network"))
        time.sleep(settle_s)  # late console messages and image decoding
        text = self.evaluate("document.body.innerText", session)
        broken = self.evaluate(
            "Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
            ".map(i => i.src)",
            session,
        )
        visit = PageVisit(url, text, broken_images=broken)
        for event in self._events:
            if event.get("sessionId") == session:
                self._note(event, visit)
        self.send("Target.closeTarget", {"targetId": target})
        return visit

    def _open(self, url: str, domains: tuple[str, ...]) -> tuple[str, str]:
        """A new tab at `url`, loaded: (target, session). The tab starts blank and navigates
        once its events are on, so that the load is seen (a tab created at `url` answers
        `document.readyState` for about:blank until the page replaces it)."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in domains:
            self.send(f"{domain}.enable", session=session)
        self._events.clear()
        self.send("Page.navigate", {"url": url}, session=session)
        self._wait_for("Page.loadEventFired", session)
        return target, session

    def evaluate(self, expression: str, session: str):
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def link_target(self, url: str, link_text: str) -> str:
        """The address a click on the link reading `link_text` goes to."""
        target, session = self._open(url, ("Page",))
        href = self.evaluate(
            "(Array.from(document.querySelectorAll('a'))"
            f".find(a => a.textContent.trim() === {json.dumps(link_text)}) || {{}}).href || null",
            session,
        )
        self.send("Target.closeTarget", {"targetId": target})
        if not href:
            raise BrowserError(f"{url} has no link reading {link_text!r}")
        return href

    @staticmethod
    def _note(event: dict, visit: PageVisit) -> None:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            texts = [str(arg.get("value", arg.get("description"))) for arg in params["args"]]
            visit.errors.append("console: " + " ".join(texts))
        elif method == "Runtime.exceptionThrown":
            visit.errors.append("exception: " + json.dumps(params.get("exceptionDetails")))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            visit.errors.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
        elif method == "Network.requestWillBeSent":
            visit.requests.append(params["request"]["url"])
        elif method == "Network.loadingFailed":
            visit.errors.append(f"load failed: {params.get('errorText')}")

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
