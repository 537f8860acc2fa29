"""What the recording proxy reads in a provider's reply on its way back, and what it masks.

`ReplySummary` keeps what the request log records of a reply (its status, the usage the provider
stated, an error message) and the ids of the tool calls it asks for, which tell the agent's own
requests from the harness's (`agentab.offline_model.origin`). `KeyRedactor` masks
the provider's key in the bytes passed back: a provider that echoes a request in its error
would otherwise hand the key to the agent.
"""

from __future__ import annotations

import json

ERROR_TEXT_LIMIT = 2000
WHOLE_REPLY_LIMIT = 20 * 1024 * 1024  # a reply beyond this is passed on, its usage not read
SECRET_MARK = "<secret>"


class ReplySummary:
    """What the log keeps of a reply: its status, the usage the provider stated, its error; and
    the tool calls it asks for."""

    def __init__(self, api, status: int, content_type: str, secrets: list[str]):
        self.api = api
        self.status = status
        self.streamed = content_type.startswith("text/event-stream")
        self.secrets = secrets
        self.usage: dict = {}
        self.calls: set[str] = set()
        self._pending = b""
        self._whole = bytearray()
        self._payload = None
        self._read = False

    def feed(self, chunk: bytes) -> None:
        if not self.streamed:
            if len(self._whole) < WHOLE_REPLY_LIMIT:
                self._whole += chunk
            return
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            self._read_event_line(line)

    def read_whole(self) -> None:
        """A reply that is not streamed is read once it is whole, before it is passed on: its
        tool calls must be known before the harness can run them."""
        if not self.streamed and not self._read:
            self._payload = self._count(bytes(self._whole))
            self._read = True

    def _read_event_line(self, line: bytes) -> None:
        if line.startswith(b"data:"):
            self._count(line[5:].strip())

    def _count(self, data: bytes) -> dict | list | None:
        try:
            payload = json.loads(data)
        except ValueError:
            return None
        for item in payload if isinstance(payload, list) else [payload]:
            if self.api is None or not isinstance(item, dict):
                continue
            self.usage.update(self.api.usage_in(item) or {})  # each API's counts are running totals
            self.calls |= self.api.calls_in(item)
        return payload

    def result(self) -> dict:
        self._read_event_line(self._pending)
        self._pending = b""
        self.read_whole()
        summary: dict = {"status": self.status}
        if self.usage:
            summary["usage"] = dict(self.usage)
        if self.status >= 400:
            summary["error"] = self._error_text(self._payload)
        return summary

    def _error_text(self, payload) -> str:
        found = payload.get("error") if isinstance(payload, dict) else None
        message = found.get("message") if isinstance(found, dict) else found
        text = str(message or bytes(self._whole[:ERROR_TEXT_LIMIT]).decode("utf-8", "replace"))
        return masked(text, self.secrets)[:ERROR_TEXT_LIMIT]


def masked(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, SECRET_MARK)
    return text


class KeyRedactor:
    """Masks the key in a reply passed back piece by piece, with a mask of the key's own length
    (a `Content-Length` stays true). A piece that ends with the key's first bytes keeps them
    until the next piece says whether the key goes on; nothing else is held back, so a streamed
    event still reaches the harness the moment it arrives."""

    def __init__(self, key: str | None):
        self.key = key.encode() if key else b""
        mark = SECRET_MARK.encode()
        self.mask = (mark * (len(self.key) // len(mark) + 1))[: len(self.key)]
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        if not self.key:
            return data
        data = (self._held + data).replace(self.key, self.mask)
        held = self._start_of_key_at_end(data)
        self._held = data[len(data) - held :] if held else b""
        return data[: len(data) - held]

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return held

    def _start_of_key_at_end(self, data: bytes) -> int:
        for size in range(min(len(self.key) - 1, len(data)), 0, -1):
            if self.key.startswith(data[-size:]):
                return size
        return 0
