"""Receipts from a request log: what was declared, what was sent, whether it was delivered."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentab.harnesses.base import StreamFacts
from agentab.harnesses.pi import PiHarness
from agentab.run.receipts import build_receipt, receipt_summary, tools_entry
from agentab.synthesis.runs.measures import build_measures

RULE = "Always run the test suite before you finish."


def log(tmp_path: Path, system: str, effort: str | None, count: int = 2) -> Path:
    path = tmp_path / "model-requests.jsonl"
    lines = []
    for seq in range(1, count + 1):
        body = {
            "model": "demo",
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": "Fix."},
            ],
            "tools": [{"type": "function", "function": {"name": n}} for n in ("read", "bash")],
        }
        if effort:
            body["reasoning_effort"] = effort
        lines.append(
            {"seq": seq, "api": "openai-chat", "path": "/v1/chat/completions", "body": body}
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def cell(tmp_path: Path, thinking: str, bricks=(), provider="offline") -> SimpleNamespace:
    agent = SimpleNamespace(
        model="demo", thinking=thinking, provider=provider, thinking_provider=provider
    )
    return SimpleNamespace(agent=agent, bricks=list(bricks))


def context_brick(tmp_path: Path) -> SimpleNamespace:
    path = tmp_path / "rule.md"
    path.write_text(f"{RULE}\n")
    return SimpleNamespace(kind="context_files", rel="bricks/rule.md", path=path)


def test_a_delivered_treatment(tmp_path):
    brick = context_brick(tmp_path)
    facts = StreamFacts(thinking_applied="high")
    receipt = build_receipt(
        cell(tmp_path, "high", [brick]), "demo", PiHarness(), facts,
        log(tmp_path, f"You are pi.\n{RULE}", "high"), None,
    )  # fmt: skip
    assert receipt["delivered"] is True and receipt["requests"] == 2
    assert receipt["thinking"] == {
        "declared": "high", "applied": "high", "expected": "high", "sent": "high", "delivered": True
    }  # fmt: skip
    assert receipt["bricks"][0]["delivered"] is True


@pytest.mark.parametrize(
    ("declared", "sent", "delivered"),
    [("high", "budget:16384", True), ("high", None, False), ("off", None, True)]
    + [("off", "low", False)],
)
def test_pi_on_a_real_provider_must_send_a_reasoning_setting_exactly_when_one_is_declared(
    tmp_path, declared, sent, delivered
):
    facts = StreamFacts(thinking_applied=declared)  # pi's word agrees: only the wire decides
    receipt = build_receipt(
        cell(tmp_path, declared, provider="anthropic"), "demo", PiHarness(), facts,
        log(tmp_path, "You are pi.", sent), None,
    )  # fmt: skip
    assert receipt["thinking"]["sent"] == sent
    assert receipt["delivered"] is delivered, receipt["problems"]


def test_a_dropped_thinking_level_and_a_missing_brick_are_caught(tmp_path):
    brick = context_brick(tmp_path)
    facts = StreamFacts(thinking_applied="off")
    receipt = build_receipt(
        cell(tmp_path, "high", [brick]), "demo", PiHarness(), facts,
        log(tmp_path, "You are pi.", None), None,
    )  # fmt: skip
    assert receipt["delivered"] is False
    assert receipt["thinking"]["sent"] is None and receipt["thinking"]["applied"] == "off"
    assert receipt["bricks"][0]["delivered"] is False
    assert len(receipt["problems"]) == 3  # not sent, not applied, the brick
    run = {"outcome": {"status": "completed"}, "receipt": {"delivered": False, "problems": ["x"]}}
    scenario = SimpleNamespace(name="s", metrics=[], validators={})
    measures = build_measures(scenario, SimpleNamespace(name="c", slug="c"), 1, run, {})
    assert measures["status"] == "invalid"
    assert measures["problems"] == ["treatment-not-delivered: x"]


def test_an_unprovable_brick_is_null_with_the_reason(tmp_path):
    agent = SimpleNamespace(kind="agents", rel="bricks/reviewer.md", path=tmp_path / "r.md")
    receipt = build_receipt(
        cell(tmp_path, "off", [agent]), "demo", PiHarness(), StreamFacts(),
        log(tmp_path, "You are pi.", None), None,
    )  # fmt: skip
    assert (
        receipt["bricks"][0]["delivered"] is None and "subagent" in receipt["bricks"][0]["evidence"]
    )
    assert receipt["delivered"] is True


def test_the_fingerprint_ignores_the_clone_and_the_date(tmp_path):
    facts = StreamFacts()
    one = build_receipt(
        cell(tmp_path, "off"), "demo", PiHarness(), facts,
        log(tmp_path, "cwd /x/.agentab/work/0123456789abcdef0123/calc on 2026-12-03", None), None,
    )  # fmt: skip
    two = build_receipt(
        cell(tmp_path, "off"), "demo", PiHarness(), facts,
        log(tmp_path, "cwd /x/.agentab/work/fedcba9876543210fedc/calc on 2026-12-04", None), None,
    )  # fmt: skip
    three = build_receipt(
        cell(tmp_path, "off"), "demo", PiHarness(), facts,
        log(tmp_path, f"cwd /x/.agentab/work/fedcba9876543210fedc/calc {RULE}", None), None,
    )  # fmt: skip
    assert one["fingerprint"] == two["fingerprint"] != three["fingerprint"]


def test_each_extension_is_proven_by_the_tools_it_declares(tmp_path):
    def extension(name: str, body: str) -> frozenset[str]:
        """The tool names pi's adapter reads in an extension of this body."""
        path = tmp_path / f"{name}.ts"
        path.write_text(body)
        return PiHarness().extension_tools(path).names

    probe = extension("probe", 'pi.registerTool(defineTool({\n  name: "brick_probe",\n}));')
    guard = extension("guard", 'pi.registerTool({ name: "guard_tool", label: "x" });')
    hooks = extension("hooks", 'pi.on("tool_call", () => { const name = "not_a_tool"; });')
    offered = {"brick_probe"}  # the guard extension was dropped
    assert tools_entry(probe, offered, 1)["delivered"] is True
    dropped = tools_entry(guard, offered, 1)
    assert dropped["delivered"] is False and "guard_tool" in dropped["evidence"]
    assert tools_entry(hooks, offered, 1)["delivered"] is None


def with_a_tool_request(path: Path, seq: int, system: str, model: str = "curl-model") -> Path:
    """The log with a request something the agent's tools sent inserted at `seq` (a `curl` to
    the endpoint from bash), the harness's requests renumbered after it."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    body = {
        "model": model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "bash"}}],
    }
    tool = {"api": "openai-chat", "path": "/v1/chat/completions", "body": body, "origin": "tool"}
    tool["reply"] = {"status": 200}
    lines.insert(seq - 1, tool)
    for number, line in enumerate(lines, start=1):
        line["seq"] = number
        line.setdefault("origin", "harness")
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_request_the_agents_tools_sent_is_listed_apart_and_never_counted(tmp_path):
    brick = context_brick(tmp_path)
    requests = with_a_tool_request(log(tmp_path, f"You are pi.\n{RULE}", "high"), 2, "x")
    receipt = build_receipt(
        cell(tmp_path, "high", [brick]), "demo", PiHarness(), StreamFacts(thinking_applied="high"),
        requests, None,
    )  # fmt: skip
    # Counted, its other model and missing reasoning setting would make the run invalid.
    assert receipt["delivered"] is True, receipt["problems"]
    assert receipt["requests"] == 2 and receipt["model"]["sent"] == ["demo"]
    assert receipt["tool_requests"] == [
        {"seq": 2, "api": "openai-chat", "path": "/v1/chat/completions", "model": "curl-model",
         "status": 200}
    ]  # fmt: skip
    assert receipt_summary(receipt)["tool_requests"] == 1


def test_a_request_the_agents_tools_sent_is_never_evidence_of_delivery(tmp_path):
    brick = context_brick(tmp_path)
    # The harness never sent the rule; a tool sent it first, as the cell was meant to.
    requests = with_a_tool_request(log(tmp_path, "You are pi.", None), 1, f"You are pi.\n{RULE}")
    receipt = build_receipt(
        cell(tmp_path, "off", [brick]), "demo", PiHarness(), StreamFacts(), requests, None
    )
    assert receipt["bricks"][0]["delivered"] is False
    assert "request 2" in receipt["bricks"][0]["evidence"]
    assert receipt["delivered"] is False and receipt["requests"] == 2


def with_later_system(path: Path, seq: int, system: str) -> Path:
    """The log with request `seq`'s system prompt replaced: the treatment changed mid-run (the
    agent rewrote its harness's memory, or a file the harness read again)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[seq - 1]["body"]["messages"][0]["content"] = system
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize(
    "later", [f"You are pi.\n{RULE.replace('test suite', 'linter')}", "You are pi."]
)
def test_a_brick_a_later_turn_altered_or_lost_is_not_delivered(tmp_path, later):
    brick = context_brick(tmp_path)
    requests = with_later_system(log(tmp_path, f"You are pi.\n{RULE}", "high", count=4), 3, later)
    receipt = build_receipt(
        cell(tmp_path, "high", [brick]), "demo", PiHarness(), StreamFacts(thinking_applied="high"),
        requests, None,
    )  # fmt: skip
    # The first request alone would prove it: the third is the one that did not carry it.
    assert receipt["bricks"][0]["delivered"] is False, receipt["bricks"]
    evidence = receipt["bricks"][0]["evidence"]
    assert "request 3" in evidence and "changed during the run" in evidence
    assert receipt["delivered"] is False and len(receipt["problems"]) == 1


def test_a_brick_every_turn_carried_says_so(tmp_path):
    brick = context_brick(tmp_path)
    receipt = build_receipt(
        cell(tmp_path, "high", [brick]), "demo", PiHarness(), StreamFacts(thinking_applied="high"),
        log(tmp_path, f"You are pi.\n{RULE}", "high", count=3), None,
    )  # fmt: skip
    assert receipt["bricks"][0]["delivered"] is True
    assert "as in every turn of the run (requests 1 to 3)" in receipt["bricks"][0]["evidence"]


def test_a_skill_a_later_turn_no_longer_lists_is_not_delivered(tmp_path):
    folder = tmp_path / "skills" / "tidy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy the code.\n---\nBody\n")
    skill = SimpleNamespace(kind="skills", rel="skills/tidy", path=folder)
    listed = "You are pi.\n<skill><name>tidy</name><description>Tidy the code.</description>"
    requests = with_later_system(log(tmp_path, listed, None, count=3), 2, "You are pi.")
    receipt = build_receipt(
        cell(tmp_path, "off", [skill]), "demo", PiHarness(), StreamFacts(), requests, None
    )
    assert receipt["bricks"][0]["delivered"] is False
    assert "request 2 does not list 'tidy'" in receipt["bricks"][0]["evidence"]


def test_an_extension_a_later_turn_no_longer_offers_is_not_delivered(tmp_path):
    path = tmp_path / "probe.ts"
    path.write_text('pi.registerTool({ name: "brick_probe", label: "x" });')
    extension = SimpleNamespace(kind="extensions", rel="extensions/probe.ts", path=path)
    requests = log(tmp_path, "You are pi.", None, count=3)
    lines = [json.loads(line) for line in requests.read_text().splitlines()]
    for line in lines[:2]:  # the first two turns offer its tool, the third no longer does
        line["body"]["tools"].append({"type": "function", "function": {"name": "brick_probe"}})
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    receipt = build_receipt(
        cell(tmp_path, "off", [extension]), "demo", PiHarness(), StreamFacts(), requests, None
    )
    assert receipt["bricks"][0]["delivered"] is False
    assert receipt["bricks"][0]["evidence"].startswith("request 3 offers none")
