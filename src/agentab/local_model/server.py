"""`LocalModel`: the model's server started as a process of its own, waited for until it
lists its model, and ended with the `with` block.

A process of its own: llama.cpp's threads and memory stay out of the workflow's, and ending it
frees them. It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.local_model.model_file import ALIAS

START_TIMEOUT_S = 120.0
# The server reads nothing of the caller's environment: llama.cpp takes its settings from
# `serve`'s arguments only.
SERVER_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class LocalModel:
    """The server of `model` (a GGUF file) on 127.0.0.1:`port` (0: a free one), answering to
    `alias`, on `threads` cores, `slots` requests at once with a context of `context` tokens
    each. Its log goes to `log`."""

    model: Path
    log: Path
    port: int = 0
    alias: str = ALIAS
    threads: int = 2
    context: int = 8192
    template: Path | None = None  # a chat template file instead of the GGUF file's own
    slots: int = 2  # requests served at once, each with `context` tokens of its own
    started_in_s: float | None = None
    _process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LocalModel:
        self.port = self.port or free_port()
        argv = [sys.executable, "-m", "agentab.local_model.serve", str(self.model)]
        argv += [str(self.port), self.alias, str(self.threads), str(self.context), str(self.slots)]
        argv += [str(self.template)] if self.template else []
        self.log.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=SERVER_ENV
            )
        try:
            self._wait_until_listed()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.started_in_s = time.monotonic() - started
        return self

    def _wait_until_listed(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._refuse(f"the server ended with code {self._process.returncode}")
            if self.alias in listed_models(self.url):
                return
            time.sleep(0.1)
        self._refuse(f"the server did not list its model within {START_TIMEOUT_S:.0f} s")

    def _refuse(self, why: str):
        tail = self.log.read_text(errors="replace")[-800:] if self.log.exists() else ""
        raise AgentabError(
            problem(
                str(self.model),
                "",
                f"{why}; its log ({self.log}) ends: {tail}",
                "pass a GGUF file llama.cpp can read, and free the memory it needs",
            )
        )

    def __exit__(self, *exc) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def listed_models(url: str) -> set[str]:
    """The model names `url/v1/models` lists (ids and aliases); empty while it does not answer."""
    try:
        with urllib.request.urlopen(url + "/v1/models", timeout=2) as reply:  # noqa: S310 (our own 127.0.0.1 server)
            body = json.loads(reply.read())
    except (OSError, ValueError):
        return set()
    names = set()
    for entry in body.get("data", []) if isinstance(body, dict) else []:
        names.add(str(entry.get("id")))
        names.update(str(alias) for alias in entry.get("aliases") or [])
    return names
