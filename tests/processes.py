"""Processes from a test: starting them as a terminal would, waiting for a condition, telling a
live process from a gone one."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def wait_until(condition: Callable[[], object], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


def is_running(pid: int) -> bool:
    """Alive, and not a zombie waiting for its parent."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def default_stop_signals() -> None:
    """For a child's `preexec_fn`: SIGINT and SIGHUP as in a terminal. A test runner started in
    the background ignores SIGINT, one started under `nohup` ignores SIGHUP, and an ignored
    signal stays ignored in every process below."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def marked_processes(mark: str) -> list[int]:
    """The processes whose command line holds `mark`, a word a test made up for its own."""
    found = subprocess.run(["pgrep", "-f", mark], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def end_processes(pids: list[int]) -> None:
    """End these processes, by their ids (a test's own, found by `marked_processes`)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
