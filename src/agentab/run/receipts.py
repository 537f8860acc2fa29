"""Receipts: proof, for every run, that its model, thinking level and bricks reached the model.

agentab does not trust that a flag was passed. From the run's request log
(`model-requests.jsonl`: every request that reached the model, as the offline model or the
recording proxy saw it) and the harness's own stream, `build_receipt` says for the model, the
thinking level and each brick what was declared, what was sent and whether it was delivered
(docs/receipts.md). Every turn of the run is checked, not the first alone: a treatment the
agent's commands changed after the first request is not delivered. A run whose treatment was
not delivered is invalid: retrying would repeat a systematic drop, and scoring it would measure
the baseline under the cell's name.

Only the harness's own requests are read for that. A request that something the agent's tools
started sent to the endpoint (a `curl` from bash: `"origin": "tool"` in the log,
`agentab.offline_model.origin`) is listed apart, under `tool_requests`, and is never a turn nor
evidence: an agent could otherwise send the model what its cell was meant to send.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from agentab.harnesses.base import ANY_REASONING, front_matter
from agentab.offline_model import wire
from agentab.offline_model.origin import HARNESS
from agentab.runfiles import RECEIPT_VERSION, ReceiptJson

PROBLEM_PREFIX = "treatment-not-delivered"
# Dates and times a harness writes into its system prompt: not part of what a cell sends.
VOLATILE = re.compile(r"\d{4}-\d{2}-\d{2}([T ][\d:.]+Z?)?|\b\d{1,2}:\d{2}(:\d{2})?\b")


@dataclass(frozen=True)
class Request:
    """One logged request, read through its wire API."""

    seq: int
    api: str
    model: str
    system: str
    prompt: str
    tools: tuple[str, ...]
    thinking: str | None
    text: str  # the whole body, for evidence that may lie anywhere in it
    origin: str = HARNESS  # or "tool": sent by something the agent's tools started
    path: str = ""
    status: int | None = None  # the reply's, when it has one

    @property
    def is_turn(self) -> bool:
        """A turn of the agent (it offers tools), not a side request (a title, a count)."""
        return bool(self.tools)


def read_requests(log: Path) -> list[Request]:
    requests = []
    if not Path(log).exists():
        return requests
    for line in Path(log).read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
            api = wire.by_name(record["api"])
            body, path = record.get("body") or {}, str(record.get("path", ""))
            conversation = api.conversation(body, path)
        except (ValueError, KeyError, StopIteration, AttributeError, TypeError):
            continue  # not a model request (a refused one), or not a line agentab wrote
        model_of = getattr(api, "model_of", None)
        requests.append(
            Request(
                seq=int(record.get("seq", len(requests) + 1)),
                api=api.NAME,
                model=model_of(body, path) if model_of else str(body.get("model", "")),
                system=conversation.system,
                prompt=conversation.prompt,
                tools=tuple(sorted(conversation.tools)),
                thinking=conversation.thinking,
                text=json.dumps(body, ensure_ascii=False),
                origin=str(record.get("origin") or HARNESS),
                path=path,
                status=reply_status(record.get("reply")),
            )
        )
    return requests


def reply_status(reply) -> int | None:
    status = reply.get("status") if isinstance(reply, dict) else None
    return status if isinstance(status, int) else None


def tool_request_entry(request: Request) -> dict:
    """A request a tool sent, as the receipt lists it: seen, never counted."""
    return {
        "seq": request.seq,
        "api": request.api,
        "path": request.path,
        "model": request.model,
        "status": request.status,
    }


def squeeze(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------------------- the checks


def model_entry(declared: str, told: str, turns: list[Request]) -> tuple[dict, list[str]]:
    sent = sorted({request.model for request in turns})
    delivered = bool(turns) and sent == [told]
    entry = {"declared": declared, "sent": sent, "delivered": delivered}
    problems = (
        [] if delivered else [f"model: declared {told}, the model was sent {sent or 'nothing'}"]
    )
    return entry, problems


def sent_as_expected(sent: str | None, expected: str | None) -> bool:
    return sent is not None if expected == ANY_REASONING else sent == expected


def thinking_entry(
    declared: str, applied: str | None, expected, turns: list[Request]
) -> tuple[dict, list[str]]:
    """`expected`: the wire setting the adapter documents for the declared level, or a map of
    wire API -> setting when the harness sends it differently per API."""
    sent_values = sorted({str(r.thinking) for r in turns if r.thinking is not None})
    unset = any(r.thinking is None for r in turns)
    sent = sent_values[0] if len(sent_values) == 1 and not unset else (sent_values or None)
    wanted = [expected.get(r.api) if isinstance(expected, dict) else expected for r in turns]
    problems = []
    if not turns:
        problems.append("thinking: no request reached the model")
    elif not all(sent_as_expected(r.thinking, want) for r, want in zip(turns, wanted, strict=True)):
        shown = "no reasoning setting" if sent is None else f"{sent!r}"
        problems.append(
            f"thinking: declared {declared}, expected {wanted[0]!r} on the wire, the model was "
            f"sent {shown}"
        )
    if applied is not None and applied != declared:
        problems.append(f"thinking: declared {declared}, the harness says it applied {applied}")
    entry = {
        "declared": declared,
        "applied": applied,
        "expected": wanted[0] if wanted else None,
        "sent": sent,
        "delivered": not problems,
    }
    return entry, problems


def skill_identity(folder: Path) -> tuple[str, str]:
    """A skill's name and description, from its SKILL.md front matter (the load refuses a
    skill without them). A description folded over several lines is one line here."""
    text = (folder / "SKILL.md").read_text(encoding="utf-8-sig")
    fields, _ = front_matter(text) or ({}, "")
    name, description = (fields.get(key) for key in ("name", "description"))
    return squeeze(str(name or "")), squeeze(str(description or ""))


def skill_announced(name: str, description: str, request: Request) -> bool:
    """The request shows the skill as the harness lists skills to a model: its description,
    exactly, with its name as a whole word just before it (pi: `<name>…</name><description>`;
    Claude Code: `plugin:name): description`; Codex: `- name: description`). A name or a
    description found alone, or a name inside a longer word, is not the skill."""
    if not name or not description:
        return False
    named = re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])")
    for text in request_strings(request):
        text = squeeze(text)
        for found in re.finditer(re.escape(description), text):
            if named.search(text, max(0, found.start() - NAME_WINDOW), found.start()):
                return True
    return False


NAME_WINDOW = 200  # characters before a description where its name must be


def request_strings(request: Request) -> list[str]:
    """Every string in a request's body: the system prompt, each message, each tool's text."""
    found: list[str] = []

    def walk(value) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    try:
        walk(json.loads(request.text))
    except ValueError:
        found.append(request.text)
    return found


def brick_entry(brick, harness, turns: list[Request]) -> dict:
    """A brick is delivered when every turn of the run carries it, not the first alone: the
    agent's commands could otherwise change the treatment mid-run (a harness's memory rewritten,
    a file it reads again) after the first request had proven it (docs/receipts.md)."""
    entry = {"kind": brick.kind, "rel": brick.rel}
    if brick.kind in harness.unprovable_bricks:
        return entry | {"delivered": None, "evidence": harness.unprovable_bricks[brick.kind]}
    if not turns:
        return entry | {"delivered": False, "evidence": "no request reached the model"}
    check = brick_check(brick, harness)
    if check is None:
        return entry | {
            "delivered": None,
            "evidence": f"{harness.name} keeps no record of loading it",
        }
    verdicts = [check(request) for request in turns]
    for place, (delivered, evidence) in enumerate(verdicts):
        if delivered is False:
            if place:
                evidence += f"; request {turns[0].seq} carried it: it changed during the run"
            return entry | {"delivered": False, "evidence": evidence}
    delivered, evidence = verdicts[0]
    if delivered and len(turns) > 1:
        evidence += f", as in every turn of the run (requests {turns[0].seq} to {turns[-1].seq})"
    return entry | {"delivered": delivered, "evidence": evidence}


def brick_check(brick, harness):
    """The check of one request for `brick`: (delivered, evidence), delivered None when the
    request cannot prove it either way; None when the harness keeps no record of it at all."""
    if brick.kind == "context_files":
        text = squeeze(Path(brick.path).read_text(encoding="utf-8"))
        return lambda request: context_in(text, request)
    if brick.kind == "skills":
        name, description = skill_identity(Path(brick.path))
        return lambda request: skill_in(name, description, request)
    builtin = getattr(harness, "builtin_tools", None)
    if builtin is None:
        return None
    declared = harness.extension_tools(Path(brick.path)).names

    def offered(request: Request) -> tuple[bool | None, str]:
        found = tools_entry(declared, set(request.tools) - set(builtin), request.seq)
        return found["delivered"], found["evidence"]

    return offered


def context_in(text: str, request: Request) -> tuple[bool, str]:
    if text and text in squeeze(request.system):
        return True, f"its text is in the system prompt of request {request.seq}"
    if text and text in squeeze(request.prompt):
        return True, f"its text is in the first message of request {request.seq}"
    return False, (
        f"its text is in neither the system prompt nor the first message of request {request.seq}"
    )


def skill_in(name: str, description: str, request: Request) -> tuple[bool, str]:
    if skill_announced(name, description, request):
        return True, (
            f"request {request.seq} lists it: its name {name!r} with its description, as in its "
            "SKILL.md"
        )
    return False, (
        f"request {request.seq} does not list {name!r} with its description as in its SKILL.md"
    )


def tools_entry(declared: frozenset[str], extra: set[str], seq: int) -> dict:
    """An extension is proven by the tools it declares (`Harness.extension_tools`): offered,
    it was loaded; declared and not offered, it was dropped (whatever another brick of the
    cell added). One that declares no tool the request offers cannot be proven either way."""
    mine = sorted(declared & extra)
    if mine:
        return {
            "delivered": True,
            "evidence": f"request {seq} offers the tools it declares: {', '.join(mine)}",
        }
    if declared and not extra & declared:
        named = ", ".join(sorted(declared)[:5])
        return {
            "delivered": False,
            "evidence": f"request {seq} offers none of the names it declares ({named})",
        }
    return {
        "delivered": None,
        "evidence": "it declares no tool the request offers: a brick that adds none cannot be proven",
    }


def fingerprint(turns: list[Request], clone: Path | None) -> str | None:
    """What a cell sent, less what differs between any two runs: the first turn's system
    prompt (its clone's path and dates blanked), tools, model and reasoning setting. Two cells
    whose runs share it sent the model the same treatment."""
    if not turns:
        return None
    first = turns[0]
    system = first.system.replace(str(clone), "<clone>") if clone else first.system
    system = re.sub(r"/[\w./-]*/work/[0-9a-f]{20}/[\w.-]+", "<clone>", system)
    payload = [VOLATILE.sub("<time>", system), list(first.tools), first.model, first.thinking]
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:16]


def build_receipt(
    cell, told_model: str, harness, facts, log: Path, clone: Path | None, bricks=None
) -> ReceiptJson:
    """The receipt of one run (docs/receipts.md). `bricks`: the copies the run was given
    (default the cell's own files), whose text is what must have reached the model."""
    logged = read_requests(log)
    requests = [request for request in logged if request.origin == HARNESS]
    turns = [request for request in requests if request.is_turn] or requests
    model, problems = model_entry(cell.agent.model, told_model, turns)
    expected = harness.sent_thinking(cell.agent.thinking, told_model, cell.agent.thinking_provider)
    thinking, thinking_problems = thinking_entry(
        cell.agent.thinking, facts.thinking_applied, expected, turns
    )
    problems += thinking_problems
    bricks = [brick_entry(brick, harness, turns) for brick in bricks or cell.bricks]
    problems += [
        f"{b['kind']} {b['rel']}: {b['evidence']}" for b in bricks if b["delivered"] is False
    ]
    return {
        "schema_version": RECEIPT_VERSION,
        "requests": len(requests),
        "tool_requests": [tool_request_entry(r) for r in logged if r.origin != HARNESS],
        "delivered": not problems,
        "model": model,
        "thinking": thinking,
        "bricks": bricks,
        "fingerprint": fingerprint(turns, clone),
        "problems": problems,
    }


def receipt_summary(receipt: dict | None) -> dict | None:
    """What measures.json carries of a receipt."""
    if receipt is None:
        return None
    return {
        "delivered": receipt["delivered"],
        "requests": receipt["requests"],
        "tool_requests": len(receipt.get("tool_requests") or []),
        "thinking_sent": receipt["thinking"].get("sent"),
        "thinking_applied": receipt["thinking"].get("applied"),
        "unproven": [b["rel"] for b in receipt["bricks"] if b["delivered"] is None],
        # brick rel -> delivered (true, false, or null: cannot be proven on this harness)
        "bricks": {b["rel"]: b["delivered"] for b in receipt["bricks"]},
        "fingerprint": receipt.get("fingerprint"),
        "problems": list(receipt["problems"]),
    }
