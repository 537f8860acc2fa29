"""The offline model over real HTTP: wire formats, tool schemas, seeded draws, judges, errors."""

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import anthropic
import jsonschema
import pytest

from agentab.errors import AgentabError
from agentab.offline_model import serve, shipped_policy_names
from agentab.offline_model.policy import Conversation, load_policy

RULE = "Before you finish, always run the test suite with `python3 -m unittest`."
# The tool schemas pi 1.6.0 offers (from a recorded request), reduced to what the policy uses.
PI_TOOLS = {
    "read": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    "bash": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
    "edit": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                    "required": ["oldText", "newText"],
                },
            },
        },
        "required": ["path", "edits"],
    },
    "write": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
}


def openai_request(base_url: str, body: dict) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"{base_url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def chat_body(system: str, assistant_turns: int = 0, stream: bool = True) -> dict:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "Fix it."}]
    messages += [{"role": "assistant", "content": "ok"}] * assistant_turns
    tools = [
        {"type": "function", "function": {"name": n, "parameters": s}} for n, s in PI_TOOLS.items()
    ]
    return {
        "model": "demo",
        "stream": stream,
        "messages": messages,
        "tools": tools,
        "reasoning_effort": "high",
    }


def sse_tool_calls(raw: bytes) -> list[dict]:
    calls: dict[int, dict] = {}
    for line in raw.decode().splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        for choice in chunk["choices"]:
            for delta in choice["delta"].get("tool_calls", []):
                call = calls.setdefault(delta["index"], {"name": "", "arguments": ""})
                call["name"] += delta.get("function", {}).get("name", "")
                call["arguments"] += delta.get("function", {}).get("arguments", "")
    return [{"name": c["name"], "input": json.loads(c["arguments"])} for c in calls.values()]


def test_streamed_openai_tool_calls_follow_the_offered_schemas(tmp_path):
    log = tmp_path / "requests.jsonl"
    with serve("demo", 7, log, harness="pi") as base_url:
        for turn in range(3):
            status, raw = openai_request(base_url, chat_body(RULE, turn))
            assert status == 200
            for call in sse_tool_calls(raw):
                jsonschema.validate(call["input"], PI_TOOLS[call["name"]])
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["seq"] for r in records] == [1, 2, 3]
    assert records[0]["body"]["reasoning_effort"] == "high"  # the thinking level as sent
    assert records[0]["reply"]["tool_calls"][0]["name"] == "read"


def test_non_streamed_openai_answer_has_usage(tmp_path):
    with serve("echo", 1, tmp_path / "log.jsonl") as base_url:
        status, raw = openai_request(base_url, chat_body("sys", stream=False))
    answer = json.loads(raw)
    assert status == 200
    assert answer["choices"][0]["message"]["content"] == "Nothing to do."
    assert answer["usage"]["prompt_tokens"] > 0


def run_tests_rate(system: str, seeds: range) -> float:
    policy = load_policy("demo")
    runs = 0
    for seed in seeds:
        conversation = Conversation(system=system, prompt="Fix it.", tools=PI_TOOLS, harness="pi")
        steps = policy.plan(conversation, seed)
        runs += any(c.name == "bash" for reply in steps for c in reply.tool_calls)
    return runs / len(seeds)


def test_demo_runs_the_tests_far_more_often_when_the_rule_arrives():
    with_rule = run_tests_rate(f"You are pi.\n{RULE}", range(400))
    without = run_tests_rate("You are pi.", range(400))
    assert 0.85 <= with_rule <= 0.95
    assert 0.10 <= without <= 0.20


def test_demo_fixes_the_divisor_with_probability_about_ninety_percent():
    policy = load_policy("demo")
    fixes = 0
    for seed in range(400):
        steps = policy.plan(Conversation(system="", prompt="", tools=PI_TOOLS, harness="pi"), seed)
        edit = next(c for r in steps for c in r.tool_calls if c.name == "edit")
        fixes += edit.input["edits"][0]["newText"] == "len(values)"
    assert 0.85 <= fixes / 400 <= 0.95


def test_same_seed_same_answers_other_seed_may_differ():
    policy = load_policy("demo")
    conversation = Conversation(system=RULE, prompt="Fix it.", tools=PI_TOOLS, harness="pi")
    plans = {seed: policy.plan(conversation, seed) for seed in range(50)}
    assert all(policy.plan(conversation, seed) == plan for seed, plan in plans.items())
    assert len({len(plan) for plan in plans.values()}) > 1


def test_a_step_whose_tool_is_not_offered_is_skipped():
    policy = load_policy("demo")
    conversation = Conversation(
        system="", prompt="", tools={"read": PI_TOOLS["read"]}, harness="pi"
    )
    assert [c.name for r in policy.plan(conversation, 1) for c in r.tool_calls] == ["read"]


VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "on_task": {"type": "boolean"},
        "ran_tests": {"type": "boolean"},
        "reason": {"type": "string"},
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["on_task", "ran_tests", "reason", "score"],
}


def test_a_judge_gets_a_forced_tool_call_that_follows_its_schema(tmp_path):
    log = tmp_path / "judge.jsonl"
    with serve("demo", 3, log) as base_url:
        client = anthropic.Anthropic(base_url=base_url, api_key="offline", max_retries=0)
        message = client.messages.create(
            model="offline-judge",
            max_tokens=512,
            system="Score the run.",
            messages=[{"role": "user", "content": "The agent ran python3 -m unittest."}],
            tools=[{"name": "verdict", "description": "v", "input_schema": VERDICT_SCHEMA}],
            tool_choice={"type": "tool", "name": "verdict"},
        )
    (block,) = [b for b in message.content if b.type == "tool_use"]
    assert block.name == "verdict"
    jsonschema.validate(block.input, VERDICT_SCHEMA)
    assert message.stop_reason == "tool_use"
    assert json.loads(log.read_text())["body"]["tool_choice"]["name"] == "verdict"


def test_judge_booleans_follow_the_policy_chance():
    policy = load_policy("demo")
    conversation = Conversation(
        system="", prompt="", tools={"verdict": VERDICT_SCHEMA}, forced_tool="verdict"
    )
    on_task = [policy.reply(conversation, s).tool_calls[0].input["on_task"] for s in range(400)]
    assert 0.85 <= sum(on_task) / 400 <= 0.95


def test_anthropic_streaming_is_served(tmp_path):
    with serve("demo", 3, tmp_path / "log.jsonl", harness="pi") as base_url:
        client = anthropic.Anthropic(base_url=base_url, api_key="offline", max_retries=0)
        tools = [{"name": n, "input_schema": s} for n, s in PI_TOOLS.items()]
        with client.messages.stream(
            model="demo",
            max_tokens=256,
            system=RULE,
            messages=[{"role": "user", "content": "Fix it."}],
            tools=tools,
        ) as stream:
            final = stream.get_final_message()
    (call,) = [b for b in final.content if b.type == "tool_use"]
    assert call.name == "read" and call.input == {"path": "calc.py"}


def test_provider_error_policy_answers_with_an_http_error(tmp_path):
    with serve("provider-error", 1, tmp_path / "log.jsonl") as base_url:
        status, raw = openai_request(base_url, chat_body("sys"))
    assert status == 400
    assert "simulated provider error" in json.loads(raw)["error"]["message"]


def test_hang_policy_never_answers_but_logs_and_releases_at_exit(tmp_path):
    log = tmp_path / "log.jsonl"
    outcome = {}
    with serve("hang", 1, log) as base_url:

        def call():
            try:
                outcome["status"] = openai_request(base_url, chat_body("sys"))[0]
            except Exception as error:  # the connection closes when the server stops
                outcome["error"] = error

        thread = threading.Thread(target=call, daemon=True)
        thread.start()
        thread.join(timeout=1.5)
        assert thread.is_alive()  # no answer
        assert json.loads(log.read_text())["reply"] is None
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_unknown_policy_is_a_clear_error():
    with pytest.raises(AgentabError, match="no policy named 'nope'"):
        load_policy("nope")
    assert {"demo", "hang", "provider-error"} <= set(shipped_policy_names())


def test_command_line_server_writes_its_port_and_serves(tmp_path):
    port_file = tmp_path / "port"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentab.offline_model",
            "--policy",
            "echo",
            "--seed",
            "1",
            "--log",
            str(tmp_path / "log.jsonl"),
            "--port-file",
            str(port_file),
        ],
        env={"PYTHONPATH": str(Path(__file__).parents[2] / "src"), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while not (port_file.exists() and port_file.read_text().strip()):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        base_url = f"http://127.0.0.1:{int(port_file.read_text())}"
        status, _ = openai_request(base_url, chat_body("sys", stream=False))
        assert status == 200
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
    assert len((tmp_path / "log.jsonl").read_text().splitlines()) == 1


def test_the_toolset_is_the_named_harness_whatever_tools_the_request_offers():
    from agentab.offline_model.toolsets import tool_call

    # A request offering pi's tools and Claude Code's: the harness's name decides, not the tools.
    tools = {**PI_TOOLS, "Read": {}, "Bash": {}}
    run = {"command": "ls"}
    assert tool_call("run", run, Conversation("", "", tools, harness="pi")) == ("bash", run)
    claude = Conversation("", "", tools, harness="claude-code")
    assert tool_call("run", run, claude)[0] == "Bash"
    # A harness whose tools the request does not offer, or none named (a judge's server): no call.
    assert tool_call("run", run, Conversation("", "", tools, harness="gemini")) is None
    assert tool_call("run", run, Conversation("", "", tools)) is None
