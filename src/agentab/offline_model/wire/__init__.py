"""The wire APIs the offline model speaks: one module per API, found by module name.

A wire module declares:

- `NAME`: the API's name as logged (`openai-chat`, `anthropic-messages`, …);
- `matches(method, path) -> bool`: whether a request is for this API;
- `conversation(body, path) -> Conversation`: what the request says, for the policy;
- `streaming(body, path) -> bool`;
- `message(reply, model, usage) -> dict` and `events(reply, model, usage) -> list[str]`: the
  answer, whole or as server-sent events;
- `error(message, status) -> dict`: an error body as the provider would send it;
- `usage_in(payload) -> dict | None`: the token counts (`input`, `output`, `cache_read`, …) a
  provider's reply or one of its streamed events states, for the recording proxy;
- `KEY_HEADER`: `(name, value)` of the header the provider's API takes its key in, the value
  with `{key}` where the key goes: the recording proxy puts a real key there and nowhere else;
- `calls_in(payload) -> set[str]`: the ids of the tool calls a reply or one of its streamed
  events asks for, and `answered_calls(body) -> set[str]`: those whose results a request
  carries; from them a server tells the harness's requests from its tools' (`..origin`);
- optionally `side_reply(method, path, body, policy) -> (status, dict) | None`: an answer to a
  request that is not a model turn (a model listing, a token count), which consumes no step.

Adding the API a new harness speaks is adding one module here.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType


@cache
def wire_modules() -> tuple[ModuleType, ...]:
    return tuple(
        importlib.import_module(f"{__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
        if not info.name.startswith("_")
    )


def wire_for(method: str, path: str) -> ModuleType | None:
    bare = path.split("?", 1)[0].rstrip("/")
    return next((m for m in wire_modules() if m.matches(method, bare)), None)


def by_name(name: str) -> ModuleType:
    return next(m for m in wire_modules() if name == m.NAME)
