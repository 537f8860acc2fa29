"""Which of a run's model requests its harness sent, and which something its tools started.

A harness asks its model, runs the tool calls of the reply, then asks again with their results.
Anything that reaches the model while those calls run, and does not carry their results, was
sent from inside a tool: a `curl` to the endpoint from bash, a script, a subagent the tool
started. Such a request is recorded like any other, with `"origin": "tool"`, and the receipt
counts it neither as a turn nor as evidence that a treatment reached the model (a hostile agent
could otherwise send the model what its cell was meant to send, or break its own receipt).

The model server (the offline model, or the recording proxy) decides, from what it saw itself:
a tool call runs from the reply that asked for it until a request carries its result. The
harness's own stream also has times (pi's messages carry a `timestamp`, `tool_execution_end`
a `durationMs`), but a tool can write into the harness's stream (measured: a bash call wrote
lines into pi's standard output through `/proc/<pid>/fd/1`), while it cannot see the id of
the call it runs in, which a real provider draws at random. Each logged request also carries
`at`, its arrival (seconds since the epoch, the clock the sandbox shares), for a person who
compares the log with the stream.

What this cannot tell: a process a tool left running in the background that sends a request
while no tool call runs (the harness is then waiting on its model) is taken for the harness's.
And Gemini's API gives a call no id (Gemini CLI makes one up for its response), so there a call
is known by its function's name, which a tool can write in a response of its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

HARNESS = "harness"
TOOL = "tool"


def arrival_time() -> float:
    return round(time.time(), 3)


class ToolCallWatch:
    """What one server knows of the tool calls of its run's conversation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: frozenset[str] = frozenset()

    def origin(self, api, body) -> str:
        """The origin of a request as it arrives (`api` its wire module, None when the request
        is none of theirs): a tool's while calls run and it carries none of their results."""
        answered = api.answered_calls(body) if api is not None and isinstance(body, dict) else set()
        with self._lock:
            if self._running and not answered & self._running:
                return TOOL
            self._running = frozenset()
            return HARNESS

    def asked(self, calls: Iterable[str]) -> None:
        """The reply to a request of the harness's asks for these calls (all of them so far,
        for a reply still streaming): they run until a request carries a result of one."""
        calls = frozenset(calls)
        if calls:
            with self._lock:
                self._running = calls
