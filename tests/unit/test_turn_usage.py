"""Per-turn output tokens of a Claude Code run, from its request log, on the run page.

`fixtures/claude_code/demo-run/`: a real Claude Code run of the demo against the offline model
(tests/e2e/test_claude_code.py), its `stream.jsonl` as printed and its `model-requests.jsonl`
with each request's body cut down to its model (the replies and their usage as logged).
"""

import json
import re
from pathlib import Path

from agentab.harnesses.claude_code import claude_transcript, read_claude_stream
from agentab.report import build_report
from agentab.report.conversation import read_conversation
from agentab.report.turn_usage import fill_output_tokens
from agentab.synthesis.synthesize import synthesize
from tests.unit.report_folder import write_results

RUN = Path(__file__).parent / "fixtures" / "claude_code" / "demo-run"


def run_folder(tmp_path: Path, requests: list[dict] | None = None) -> Path:
    """A run folder holding the real run's transcript and its request log (or `requests`)."""
    lines = claude_transcript(RUN / "stream.jsonl", task="Fix mean().")
    (tmp_path / "transcript.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    log = (RUN / "model-requests.jsonl").read_text()
    if requests is not None:
        log = "".join(json.dumps(record) + "\n" for record in requests)
    (tmp_path / "model-requests.jsonl").write_text(log)
    return tmp_path


def outputs_of(folder: Path) -> list:
    conversation = read_conversation(folder)
    fill_output_tokens(conversation, folder / "model-requests.jsonl")
    return [turn.usage.get("output") for turn in conversation.turns if turn.role == "assistant"]


def logged_requests() -> list[dict]:
    return [json.loads(line) for line in (RUN / "model-requests.jsonl").read_text().splitlines()]


def test_each_turn_gets_the_output_its_reply_stated_and_they_add_up_to_the_session(tmp_path):
    outputs = outputs_of(run_folder(tmp_path))
    assert outputs == [39, 63, 25]
    # The session's own total, from Claude Code's `result` line, is the sum of the turns.
    assert sum(outputs) == read_claude_stream(RUN / "stream.jsonl").tokens["output"]


def test_a_request_of_claude_codes_own_between_turns_is_not_taken_for_a_turn(tmp_path):
    requests = logged_requests()
    title = {"seq": 2, "body": {"model": "haiku"}, "reply": {"status": 200, "text": "Title",
             "tool_calls": [], "usage": {"input": 90, "output": 7}}}  # fmt: skip
    for record in requests[1:]:
        record["seq"] += 1
    assert outputs_of(run_folder(tmp_path, [requests[0], title, *requests[1:]])) == [39, 63, 25]


def test_a_recording_proxys_log_matches_by_input_alone(tmp_path):
    requests = logged_requests()
    for record in requests:  # the proxy keeps a reply's status and usage, not its content
        record["reply"] = {"status": 200, "usage": record["reply"]["usage"]}
    assert outputs_of(run_folder(tmp_path, requests)) == [39, 63, 25]


def test_a_turn_without_a_request_of_its_own_keeps_its_output_unsaid(tmp_path):
    requests = logged_requests()
    del requests[1]
    assert outputs_of(run_folder(tmp_path, requests)) == [39, None, 25]
    assert outputs_of(run_folder(tmp_path, [])) == [None, None, None]


def test_the_run_page_shows_each_claude_code_turns_input_and_output(tmp_path):
    results = write_results(tmp_path / "results" / "tests-rule")
    run_folder(results / "runs" / "rule" / "r01")
    synthesize(results)
    build_report(results)
    html = (results / "report" / "runs" / "rule" / "r01.html").read_text(encoding="utf-8")
    shown = re.findall(r'<span class="usage">(.*?)</span>', html)
    assert shown == ["11807 in · 39 out", "11899 in · 63 out", "12027 in · 25 out"], shown
