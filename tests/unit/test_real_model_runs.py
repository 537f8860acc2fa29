"""What a real model did inside agentab that no offline policy does, read back from pi's streams
recorded against Qwen2.5-Coder-1.5B-Instruct on llama.cpp's server (docs/local-models.md):

- `qwen-call-as-text`: with the model's own chat template, the model wrote its call as a fenced
  json block in the reply's text; the server returned it as text, pi ran nothing and ended.
- `qwen-edit-refused-then-timeout`: a call the server parsed, run by pi in the sandbox and
  refused there (`oldText` not in the file: the model had not read it); the run's next request
  was still unanswered when its timeout came.
- `qwen-ran-tests-then-timeout`: the model ran the tests through bash, their failures went back
  to it, and its next reply (an edit) was still coming when the run's timeout came.
- `qwen-refused-call-repeated-to-timeout`: the model gave bash `timeout: 0`, pi refused the call
  before running it, and the model sent the same call again, 13 times, until the timeout.
- `qwen-fixed-then-reran-tests-to-timeout`: the model ran the tests, fixed `mean`, saw them pass,
  and ran them again and again, never ending its turn, until the timeout.

Each is an outcome of the agent's, never rewritten: a call written as text is not a call, a
refused call is a tool error, a run cut by its timeout after answered requests is `timeout`; a
run none of whose requests was answered is the provider's fault.
"""

from __future__ import annotations

import gzip
import http.client
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agentab.harnesses import get_harness
from agentab.harnesses.base import HarnessFault
from agentab.harnesses.pi import pi_transcript, read_pi_stream
from agentab.offline_model import local_server
from agentab.run.recording_proxy import recording, refuse_a_run_never_answered
from agentab.synthesis.runs.builtin import tool_call_counts
from agentab.trajectory import behaviour, run_trajectory

FIXTURES = Path(__file__).parent / "fixtures" / "pi"
REPO = Path(__file__).resolve().parents[2]
pi = get_harness("pi")


def test_a_call_written_as_text_is_a_reply_not_a_call():
    stream = FIXTURES / "qwen-call-as-text.jsonl"
    facts = read_pi_stream(stream)
    assert facts.tool_calls == {} and facts.turns == 1 and facts.stop_reason == "stop"
    # The reply is kept as the model wrote it: the call's text, unparsed, is the final message.
    assert facts.final_message.startswith('```json\n{\n  "name": "edit"')
    assert pi.classify(facts, 0, False).as_dict() == {"status": "completed", "reason": None}
    lines = pi_transcript(stream)
    assert [entry.get("tool_calls") for entry in lines if entry.get("role") == "assistant"] == [[]]
    pattern = behaviour.tests_pattern(["unittest"])
    measures = behaviour.behaviour_measures(
        run_trajectory(lines, {}), {"facts": facts.__dict__}, pattern
    )
    assert measures["calls_edit"] == 0 and measures["files_edited"] == 0


def test_a_call_refused_in_the_sandbox_is_a_tool_error_and_the_cut_run_a_timeout():
    stream = FIXTURES / "qwen-edit-refused-then-timeout.jsonl"
    facts = read_pi_stream(stream)
    assert facts.tool_calls == {"edit": 1} and facts.stop_reason == "toolUse"
    assert facts.tokens["input"] == 1354 and facts.tokens["output"] == 50
    lines = pi_transcript(stream)
    (call,) = [c for e in lines if e.get("role") == "assistant" for c in e["tool_calls"]]
    (result,) = [e for e in lines if e.get("type") == "tool_result"]
    # The id is the server's: the call came out of the model's reply, not out of pi.
    assert result["id"] == call["id"] == "laPeeptvBq9VUT2bkc1wIP1gscjEeyF7"
    assert result["is_error"] is True and "Could not find the exact text" in result["output"]
    assert pi.classify(facts, None, True).as_dict() == {"status": "failed", "reason": "timeout"}


def test_one_call_repeated_until_the_context_filled_is_a_completed_run_of_failed_calls(tmp_path):
    # From scenarios/local-model's own experiment (docs/local-models.md): the model wrote the
    # same file in pi's installation 26 times; pi gave each turn what was left of the 8 192
    # tokens of context as its longest reply, until a reply was cut at `length`, empty.
    stream = tmp_path / "stream.jsonl"
    stream.write_bytes(
        gzip.decompress(
            (FIXTURES / "qwen-one-call-repeated-until-the-context-filled.jsonl.gz").read_bytes()
        )
    )
    facts = read_pi_stream(stream)
    assert facts.stop_reason == "length" and facts.final_message == "" and facts.turns == 28
    assert facts.tool_calls == {"edit": 1, "write": 26}
    # The run ended by itself: the agent's outcome, scored like any other (no patch here).
    assert pi.classify(facts, 0, False).as_dict() == {"status": "completed", "reason": None}
    lines = pi_transcript(stream)
    results = [e for e in lines if e.get("type") == "tool_result"]
    # The harness's own files are read-only in the sandbox: every write was refused there.
    refused = "EROFS: read-only file system, open '/opt/harness/node_modules/"
    assert sum(r["output"].startswith(refused) and r["is_error"] for r in results) == 26
    trajectory = run_trajectory(lines, {"facts": facts.__dict__})
    assert tool_call_counts(trajectory) == (27, 27)
    measures = behaviour.behaviour_measures(
        trajectory, {"facts": facts.__dict__}, behaviour.tests_pattern(["unittest"])
    )
    assert measures["repeated_calls"] == 25 and measures["calls_edit"] == 27
    assert measures["files_read"] == 0 and measures["tests_ran"] is False


def test_tests_the_model_ran_through_bash_are_a_test_run_with_their_real_output():
    stream = FIXTURES / "qwen-ran-tests-then-timeout.jsonl"
    facts = read_pi_stream(stream)
    assert facts.tool_calls == {"bash": 1}
    lines = pi_transcript(stream)
    (call,) = [c for e in lines if e.get("role") == "assistant" for c in e["tool_calls"]]
    assert call["kind"] == "run" and call["command"] == "python3 -m unittest"
    (result,) = [e for e in lines if e.get("type") == "tool_result"]
    # The etalon's tests failed in the sandbox: unittest's own report, a failed command.
    assert "ERROR: test_mean_of_one" in result["output"] and result["is_error"] is True
    pattern = behaviour.tests_pattern(["unittest"])
    measures = behaviour.behaviour_measures(
        run_trajectory(lines, {}), {"facts": facts.__dict__}, pattern
    )
    assert measures["calls_tests"] == 1 and measures["tests_ran"] is True
    assert pi.classify(facts, None, True).as_dict() == {"status": "failed", "reason": "timeout"}


def proxy_log(tmp_path, *replies):
    log = tmp_path / "model-requests.jsonl"
    lines = [{"seq": n, "path": "/v1/chat/completions", "reply": r} for n, r in enumerate(replies)]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return log


def test_a_run_cut_while_the_server_worked_on_its_next_turn_is_its_timeout(tmp_path):
    # As recorded: the first request answered, the second still being read by a busy server.
    answered = {"status": 200, "usage": {"input": 1354, "output": 50, "cache_read": 0}}
    refuse_a_run_never_answered(proxy_log(tmp_path, answered, None), "http://127.0.0.1:8080")


def test_a_run_whose_only_request_waited_behind_another_run_is_a_fault(tmp_path):
    with pytest.raises(HarnessFault, match="1 request sent, none answered"):
        refuse_a_run_never_answered(proxy_log(tmp_path, None), "http://127.0.0.1:8080")


class SlowModel(BaseHTTPRequestHandler):
    """A model server that has begun its streamed reply and writes on slowly (a long reply of a
    real model on 2 busy cores), until the test lets it finish."""

    released = threading.Event()

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        delta = {"choices": [{"index": 0, "delta": {"content": "To fix the `mean` function"}}]}
        self.wfile.write(b"data: " + json.dumps(delta).encode() + b"\n\n")
        self.wfile.flush()
        self.released.wait(10)


def test_a_run_cut_while_its_only_reply_was_streaming_is_its_timeout_not_a_fault(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(local_server, "HANDLERS_GRACE_S", 0.2)
    SlowModel.released = threading.Event()
    model = ThreadingHTTPServer(("127.0.0.1", 0), SlowModel)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    log = tmp_path / "model-requests.jsonl"
    try:
        endpoint = f"http://127.0.0.1:{model.server_address[1]}"
        with recording(endpoint, log, 30) as url:
            connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=10)
            body = {"model": "qwen2.5-coder", "stream": True, "messages": []}
            connection.request("POST", "/v1/chat/completions", body=json.dumps(body).encode())
            reply = connection.getresponse()
            assert reply.status == 200 and b"To fix" in reply.read1(65536)
        # The run ended (its timeout) while the reply was coming: the server answered, the
        # model was slow or endless. That is the agent's outcome, measured, never redone.
        (line,) = [json.loads(text) for text in log.read_text().splitlines()]
        assert line["reply"] == {"status": 200, "cut": True}
        refuse_a_run_never_answered(log, endpoint)
    finally:
        SlowModel.released.set()
        model.shutdown()
        model.server_close()


def scenario_behaviour(tmp_path, stream_name: str) -> dict:
    """The local-model scenario's behaviour validator on the transcript of a recorded stream."""
    transcript = tmp_path / "transcript.jsonl"
    lines = pi_transcript(FIXTURES / stream_name)
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    context = tmp_path / "context.json"
    context.write_text(json.dumps({"transcript": str(transcript)}))
    script = REPO / "scenarios" / "local-model" / "validators" / "behaviour.py"
    done = subprocess.run(
        [sys.executable, str(script), str(context)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_a_test_command_pi_refused_before_running_it_is_not_a_test_run(tmp_path):
    refused = scenario_behaviour(tmp_path, "qwen-refused-call-repeated-to-timeout.jsonl")
    assert refused["metrics"]["tool_calls"] == 13
    assert refused["metrics"]["commands"] == ["python3 -m unittest"] * 13
    assert refused["metrics"]["ran_tests"] is False
    assert "13 asked for the tests, none ran them" in refused["reasons"]["ran_tests"]
    ran = scenario_behaviour(tmp_path, "qwen-ran-tests-then-timeout.jsonl")
    assert ran["metrics"]["ran_tests"] is True  # failing tests ran: unittest's report came back


def test_a_model_that_fixed_the_bug_and_never_ended_its_turn_is_a_timeout(tmp_path):
    stream = FIXTURES / "qwen-fixed-then-reran-tests-to-timeout.jsonl"
    facts = read_pi_stream(stream)
    assert facts.tool_calls == {"bash": 5, "edit": 1} and facts.stop_reason == "toolUse"
    lines = pi_transcript(stream)
    outputs = [e["output"] for e in lines if e.get("type") == "tool_result"]
    assert "Ran 3 tests" in outputs[-1] and outputs[-1].rstrip().endswith("OK")
    pattern = behaviour.tests_pattern(["unittest"])
    measures = behaviour.behaviour_measures(
        run_trajectory(lines, {}), {"facts": facts.__dict__}, pattern
    )
    assert measures["calls_tests"] == 5 and measures["repeated_calls"] == 4
    # It never ended: a timeout, measured as failed, whatever its patch (docs/workflow.md).
    assert pi.classify(facts, None, True).as_dict() == {"status": "failed", "reason": "timeout"}
    assert scenario_behaviour(tmp_path, stream.name)["metrics"]["ran_tests"] is True
