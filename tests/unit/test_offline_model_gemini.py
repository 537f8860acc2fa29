"""The offline model's Gemini API over real HTTP: what Gemini CLI sends, what it gets back.

The tool schemas and the request shape are those Gemini CLI 0.61.0 sent to the offline model
(recorded), reduced to what the policy uses.
"""

import json
import urllib.error
import urllib.request
from dataclasses import replace

import jsonschema
import pytest

from agentab.offline_model import serve
from agentab.offline_model.policy import load_policy
from agentab.offline_model.wire import gemini, wire_for

RULE = "Before you finish, always run the test suite with `python3 -m unittest`."
GEMINI_TOOLS = {
    "read_file": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "start_line": {"type": "integer"}},
        "required": ["file_path"],
    },
    "replace": {
        "type": "object",
        "properties": {
            "file_path": {"type": "string"},
            "instruction": {"type": "string"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
            "allow_multiple": {"type": "boolean"},
        },
        "required": ["file_path", "instruction", "old_string", "new_string"],
    },
    "write_file": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["file_path", "content"],
    },
    "run_shell_command": {
        "type": "object",
        "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
        "required": ["command"],
    },
    "glob": {"type": "object", "properties": {"pattern": {"type": "string"}}},
}
STREAM_PATH = "/v1beta/models/demo:streamGenerateContent?alt=sse"


def gemini_body(system: str, model_turns: int = 0, thinking: dict | None = None) -> dict:
    contents = [
        {"role": "user", "parts": [{"text": "<session_context>...</session_context>"}]},
        {"role": "user", "parts": [{"text": "Fix it."}]},
    ]
    for turn in range(model_turns):
        call = {"functionCall": {"name": "glob", "args": {"pattern": "*"}}}
        contents.append({"role": "model", "parts": [{"text": "ok", "thought": True}, call]})
        answer = {"functionResponse": {"name": "glob", "response": {"output": f"r{turn}"}}}
        contents.append({"role": "user", "parts": [answer]})
    declarations = [
        {"name": name, "description": name, "parametersJsonSchema": schema}
        for name, schema in GEMINI_TOOLS.items()
    ]
    config = {"temperature": 1, "thinkingConfig": {"includeThoughts": True, **(thinking or {})}}
    return {
        "contents": contents,
        "systemInstruction": {"role": "user", "parts": [{"text": system}]},
        "tools": [{"functionDeclarations": declarations}],
        "generationConfig": config,
    }


def post(base_url: str, path: str, body: dict) -> tuple[int, bytes]:
    request = urllib.request.Request(
        base_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "x-goog-api-key": "offline"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def sse_chunks(raw: bytes) -> list[dict]:
    return [
        json.loads(line[len("data: ") :])
        for line in raw.decode().splitlines()
        if line.startswith("data: ")
    ]


def parts_of(chunks: list[dict]) -> list[dict]:
    return [part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]]


def test_gemini_paths_are_recognised_with_the_model_and_streaming_in_the_path():
    assert wire_for("POST", STREAM_PATH) is gemini
    assert wire_for("POST", "/v1beta/models/gemini-2.5-pro:generateContent") is gemini
    assert wire_for("POST", "/v1beta/models/demo:countTokens") is None  # a side reply
    assert gemini.streaming({}, STREAM_PATH)
    assert not gemini.streaming({}, "/v1beta/models/demo:generateContent")


def test_streamed_function_calls_follow_the_offered_schemas(tmp_path):
    log = tmp_path / "requests.jsonl"
    with serve("demo", 7, log, harness="gemini") as base_url:
        for turn in range(3):
            status, raw = post(base_url, STREAM_PATH, gemini_body(RULE, turn))
            assert status == 200
            chunks = sse_chunks(raw)
            assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
            assert chunks[-1]["usageMetadata"]["promptTokenCount"] > 0
            for part in parts_of(chunks):
                if "functionCall" in part:
                    call = part["functionCall"]
                    jsonschema.validate(call["args"], GEMINI_TOOLS[call["name"]])
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["api"] for r in records] == ["gemini"] * 3
    assert records[0]["path"] == STREAM_PATH
    assert records[0]["reply"]["tool_calls"][0]["name"] == "read_file"
    assert records[1]["reply"]["tool_calls"][0]["name"] == "replace"


def test_a_request_reads_as_a_conversation():
    body = gemini_body(RULE, model_turns=2, thinking={"thinkingBudget": 16384})
    conversation = gemini.conversation(body, STREAM_PATH)
    assert conversation.system == RULE
    assert conversation.prompt == "<session_context>...</session_context>\nFix it."
    assert set(conversation.tools) == set(GEMINI_TOOLS)
    assert conversation.tools["read_file"]["required"] == ["file_path"]
    assert conversation.assistant_turns == 2
    assert conversation.thinking == "budget:16384"


@pytest.mark.parametrize(
    "thinking, read",
    [
        ({}, None),  # includeThoughts alone asks for nothing
        ({"thinkingBudget": 0}, None),
        ({"thinkingBudget": 8192}, "budget:8192"),
        ({"thinkingBudget": -1}, "budget:-1"),
        ({"thinkingLevel": "HIGH"}, "high"),
        ({"thinkingLevel": "MINIMAL"}, "minimal"),
    ],
)
def test_thinking_config_reads_as_documented(thinking, read):
    body = gemini_body(RULE, thinking=thinking)
    assert gemini.conversation(body, STREAM_PATH).thinking == read


def test_a_thought_part_is_sent_only_when_thinking_is_asked_for(tmp_path):
    final = 9  # past every step of the demo: its final answer
    with serve("demo", 1, tmp_path / "log.jsonl", harness="gemini") as base_url:
        _, plain = post(base_url, STREAM_PATH, gemini_body("sys", final))
        _, thinking = post(
            base_url, STREAM_PATH, gemini_body("sys", final, thinking={"thinkingBudget": 512})
        )
    assert [p for p in parts_of(sse_chunks(plain)) if p.get("thought")] == []
    thoughts = [p for p in parts_of(sse_chunks(thinking)) if p.get("thought")]
    assert thoughts == [{"text": "The divisor was off by one.", "thought": True}]


def test_demo_runs_the_tests_far_more_often_when_the_rule_is_in_the_system_instruction():
    policy = load_policy("demo")

    def rate(system: str) -> float:
        runs = 0
        for seed in range(400):
            conversation = gemini.conversation(gemini_body(system), STREAM_PATH)
            plan = policy.plan(replace(conversation, harness="gemini"), seed)
            runs += any(c.name == "run_shell_command" for r in plan for c in r.tool_calls)
        return runs / 400

    assert 0.85 <= rate(f"You are Gemini CLI.\n{RULE}") <= 0.95
    assert 0.10 <= rate("You are Gemini CLI.") <= 0.20


def test_non_streamed_generate_content_and_count_tokens(tmp_path):
    log = tmp_path / "log.jsonl"
    with serve("echo", 1, log) as base_url:
        status, raw = post(base_url, "/v1beta/models/demo:generateContent", gemini_body("s"))
        count_status, count = post(base_url, "/v1beta/models/demo:countTokens", gemini_body("s"))
    answer = json.loads(raw)
    assert status == 200
    assert answer["candidates"][0]["content"]["parts"] == [{"text": "Nothing to do."}]
    assert answer["usageMetadata"]["candidatesTokenCount"] > 0
    assert count_status == 200 and json.loads(count)["totalTokens"] > 0
    assert len(log.read_text().splitlines()) == 1  # a token count is not a model turn


def test_provider_error_is_a_gemini_error_body(tmp_path):
    with serve("provider-error", 1, tmp_path / "log.jsonl") as base_url:
        status, raw = post(base_url, STREAM_PATH, gemini_body("s"))
    assert status == 400
    assert json.loads(raw)["error"] == {
        "code": 400,
        "message": "offline model: simulated provider error",
        "status": "INVALID_ARGUMENT",
    }
