"""A run's receipt.json as a person reads it: one row per thing the cell had to deliver.

The receipt proves that the model, the thinking level and each brick reached the model
(docs/receipts.md). A dump of its keys (`bricks[0].delivered  true`) makes a reader assemble
that proof; a row per item, with whether it was delivered and the evidence, states it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from agentab.errors import AgentabError
from agentab.runfiles import RECEIPT_VERSION, schema_version

DELIVERED = {True: "yes", False: "no", None: "cannot be proven"}


@dataclass(frozen=True)
class ReceiptRow:
    item: str  # the model's name, the level, a brick's path
    kind: str  # model, thinking, or the brick's kind
    delivered: str  # yes, no, cannot be proven
    evidence: str


@dataclass
class ReceiptView:
    readable: bool
    delivered: str = ""
    requests: int | None = None
    fingerprint: str = ""
    rows: list[ReceiptRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def receipt_view(path: Path) -> ReceiptView | None:
    """None without a receipt.json; an unreadable one says so."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ReceiptView(readable=False)
    if not isinstance(data, dict):
        return ReceiptView(readable=False)
    try:
        schema_version(data, path, RECEIPT_VERSION)
    except AgentabError:  # a newer agentab's receipt, or an edited one: never misread
        return ReceiptView(readable=False)
    rows = [row for row in (_model_row(data), _thinking_row(data)) if row is not None]
    rows += [_brick_row(brick) for brick in data.get("bricks") or [] if isinstance(brick, dict)]
    return ReceiptView(
        readable=True,
        delivered=_delivered(data.get("delivered")),
        requests=data.get("requests") if isinstance(data.get("requests"), int) else None,
        fingerprint=str(data.get("fingerprint") or ""),
        rows=rows,
        problems=[str(problem) for problem in data.get("problems") or []],
    )


def _delivered(value) -> str:
    return DELIVERED.get(value, str(value)) if isinstance(value, bool | None) else str(value)


def _model_row(data: dict) -> ReceiptRow | None:
    model = data.get("model")
    if not isinstance(model, dict):
        return None
    sent = model.get("sent") or []
    sent_text = ", ".join(str(name) for name in sent) if isinstance(sent, list) else str(sent)
    return ReceiptRow(
        item=str(model.get("declared", "")),
        kind="model",
        delivered=_delivered(model.get("delivered")),
        evidence=f"every turn named {sent_text}" if sent_text else "no turn named a model",
    )


def _thinking_row(data: dict) -> ReceiptRow | None:
    thinking = data.get("thinking")
    if not isinstance(thinking, dict):
        return None
    parts = []
    if "expected" in thinking:
        parts.append(f"expected on the wire: {_setting(thinking.get('expected'))}")
    parts.append(f"sent: {_setting(thinking.get('sent'))}")
    if thinking.get("applied") is not None:
        parts.append(f"the harness says it applied {thinking['applied']}")
    return ReceiptRow(
        item=str(thinking.get("declared", "")),
        kind="thinking",
        delivered=_delivered(thinking.get("delivered")),
        evidence="; ".join(parts),
    )


def _brick_row(brick: dict) -> ReceiptRow:
    return ReceiptRow(
        item=str(brick.get("rel", "")),
        kind=str(brick.get("kind", "brick")),
        delivered=_delivered(brick.get("delivered")),
        evidence=str(brick.get("evidence") or brick.get("reason") or ""),
    )


def _setting(value) -> str:
    if value is None:
        return "no reasoning setting"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
