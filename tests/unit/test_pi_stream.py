"""Reading pi's JSON stream into run facts, from streams recorded from the real pi 1.6.0.

The fixtures were captured by running pi against the offline model: `demo-completed` (policy
demo, thinking high), `provider-error` (HTTP 400), `flaky` (one 529 then an answer: pi retried,
two agent_end), `hang` (killed at a 3 s timeout).
"""

from pathlib import Path

import pytest

from agentab.harnesses import get_harness
from agentab.harnesses.base import HarnessFault, StreamFacts
from agentab.harnesses.pi import read_pi_stream

FIXTURES = Path(__file__).parent / "fixtures" / "pi"
pi = get_harness("pi")


def facts_of(name: str) -> StreamFacts:
    return read_pi_stream(FIXTURES / f"{name}.jsonl")


def test_completed_run_counts_turns_tools_tokens_and_cost():
    facts = facts_of("demo-completed")
    assert facts.turns == 4
    assert facts.tool_calls == {"read": 1, "edit": 1, "bash": 1}
    assert facts.tokens["input"] > 1000 and facts.tokens["output"] > 0
    assert facts.cost_usd is not None and facts.cost_usd > 0
    assert facts.final_message.startswith("I fixed `mean` in calc.py")
    assert facts.stop_reason == "stop"
    assert facts.errors == []
    assert pi.classify(facts, 0, False).as_dict() == {"status": "completed", "reason": None}


def test_provider_error_is_a_failed_run_never_a_valid_one():
    facts = facts_of("provider-error")
    assert facts.stop_reason == "error"
    assert "simulated provider error" in facts.errors[-1]
    outcome = pi.classify(facts, 0, False)  # pi exits 0 on a provider error
    assert outcome.status == "failed"
    assert outcome.reason.startswith("agent-error: ") and "400" in outcome.reason


def test_an_error_pi_retried_away_does_not_decide_the_outcome():
    text = (FIXTURES / "flaky.jsonl").read_text()
    assert text.count('"type":"agent_end"') == 2  # the fixture really holds a retry
    facts = facts_of("flaky")
    assert facts.turns == 1
    assert facts.final_message == "Answered after a retry."
    assert any("529" in error for error in facts.errors)  # kept as a diagnostic
    assert pi.classify(facts, 0, False).status == "completed"


def test_timeout_is_a_failed_outcome():
    facts = facts_of("hang")
    assert facts.turns == 0 and facts.stop_reason == ""
    assert pi.classify(facts, None, True).as_dict() == {"status": "failed", "reason": "timeout"}


def test_a_crash_is_a_fault_not_an_outcome(tmp_path):
    empty = tmp_path / "stream.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(HarnessFault):
        pi.classify(read_pi_stream(empty), 1, False)
    with pytest.raises(HarnessFault):  # exit 0 yet no assistant message: not a measurable run
        pi.classify(read_pi_stream(empty), 0, False)


def test_a_truncated_line_is_reported_and_the_rest_still_read(tmp_path):
    lines = (FIXTURES / "demo-completed.jsonl").read_bytes().split(b"\n")
    broken = tmp_path / "stream.jsonl"
    broken.write_bytes(b"\n".join([lines[0][:20], *lines[1:]]))
    facts = read_pi_stream(broken)
    assert facts.errors == ["stream line 1 is not JSON"]
    assert facts.turns == 4


def test_unknown_harness_is_a_clear_error():
    from agentab.errors import AgentabError

    with pytest.raises(AgentabError, match=r"agent.harness(.|\n)*use one of: (.*, )?pi"):
        get_harness("claude-kode")
