"""The OpenAI Responses API of the offline model over real HTTP, and Codex's tools in it.

The requests imitate what Codex CLI 0.171 sends (recorded from the real binary): the base
prompt and `developer_instructions` as developer messages, the task as a user message, the
tool `exec_command`, the model's earlier items (message, function_call) and their outputs.
"""

import json
import urllib.error
import urllib.request

import jsonschema
import pytest

from agentab.offline_model import serve
from agentab.offline_model.policy import Conversation, load_policy
from agentab.offline_model.wire import openai_responses, wire_for

RULE = "Before you finish, always run the test suite with `python3 -m unittest`."
# exec_command as Codex 0.171 offers it, reduced to what the policy uses.
EXEC_COMMAND = {
    "type": "object",
    "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}},
    "required": ["cmd"],
    "additionalProperties": False,
}
CODEX_TOOLS = [
    {"type": "function", "name": "exec_command", "parameters": EXEC_COMMAND, "strict": False},
    {"type": "web_search", "external_web_access": False},
]
CALC = "def mean(values):\n    return sum(values) / (len(values) - 1)\n"


def developer(text: str) -> dict:
    return {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": text}],
    }


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def earlier_reply(call_id: str, cmd: str, output: str) -> list[dict]:
    """One earlier model reply as Codex sends it back: its message, its call, the output."""
    said = {"type": "output_text", "text": "ok", "annotations": []}
    return [
        {"type": "message", "role": "assistant", "content": [said]},
        {
            "type": "function_call",
            "name": "exec_command",
            "call_id": call_id,
            "arguments": json.dumps({"cmd": cmd}),
        },
        {"type": "function_call_output", "call_id": call_id, "output": output},
    ]


def responses_body(rule: str = RULE, earlier=(), effort="high", stream=True, tools=None) -> dict:
    body = {
        "model": "demo",
        "input": [developer("You are a coding agent."), developer(rule), user("Fix mean.")],
        "tools": CODEX_TOOLS if tools is None else tools,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"effort": effort, "summary": "auto"},
        "store": False,
        "stream": stream,
        "include": ["reasoning.encrypted_content"],
    }
    for reply in earlier:
        body["input"] += reply
    return body


def post(base_url: str, body: dict) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"{base_url}/v1/responses",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def sse_events(raw: bytes) -> list[dict]:
    """The events of a server-sent stream, each checked to name its type twice alike."""
    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        event = json.loads(fields["data"])
        assert fields["event"] == event["type"]
        events.append(event)
    return events


def done_items(events: list[dict]) -> list[dict]:
    return [e["item"] for e in events if e["type"] == "response.output_item.done"]


def test_a_streamed_reply_opens_with_created_and_ends_with_completed_and_its_usage(tmp_path):
    log = tmp_path / "requests.jsonl"
    with serve("demo", 7, log, harness="codex") as base_url:
        status, raw = post(base_url, responses_body())
    assert status == 200
    events = sse_events(raw)
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"
    usage = events[-1]["response"]["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    message, call = done_items(events)
    assert message["type"] == "message" and message["role"] == "assistant"
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert "".join(deltas) == message["content"][0]["text"] == "Let me look at calc.py first."
    assert call["type"] == "function_call" and call["name"] == "exec_command"
    arguments = json.loads(call["arguments"])
    jsonschema.validate(arguments, EXEC_COMMAND)
    assert arguments == {"cmd": "cat calc.py"}
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["api"] == "openai-responses" and record["path"] == "/v1/responses"
    assert record["body"]["reasoning"]["effort"] == "high"  # the thinking level as sent


def test_a_reply_is_one_assistant_turn_however_many_items_it_has():
    body = responses_body(earlier=[earlier_reply("c1", "cat calc.py", CALC)])
    body["input"].insert(3, {"type": "reasoning", "summary": []})  # belongs to the same reply
    conversation = openai_responses.conversation(body)
    assert conversation.assistant_turns == 1
    assert conversation.tool_outputs == (CALC,)
    assert RULE in conversation.system and "You are a coding agent." in conversation.system
    assert conversation.prompt == "Fix mean."
    assert set(conversation.tools) == {"exec_command"}  # a hosted tool is no function


def test_an_edit_is_a_codex_patch_of_the_whole_line_as_the_agent_read_it(tmp_path):
    with serve("demo", 7, tmp_path / "log.jsonl", harness="codex") as base_url:
        body = responses_body(earlier=[earlier_reply("c1", "cat calc.py", CALC)])
        status, raw = post(base_url, body)
    assert status == 200
    (call,) = [i for i in done_items(sse_events(raw)) if i["type"] == "function_call"]
    command = json.loads(call["arguments"])["cmd"]
    assert command == (
        "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: calc.py\n@@\n"
        "-    return sum(values) / (len(values) - 1)\n"
        "+    return sum(values) / (len(values))\n"
        "*** End Patch\nPATCH"
    )


def test_an_edit_of_text_the_agent_never_saw_patches_it_as_a_line():
    conversation = Conversation(
        system="", prompt="", tools={"exec_command": EXEC_COMMAND}, harness="codex"
    )
    from agentab.offline_model.toolsets import tool_call

    args = {"path": "a.py", "old": "x = 1", "new": "x = 2"}
    name, arguments = tool_call("edit", args, conversation)
    assert name == "exec_command"
    assert "-x = 1\n+x = 2\n" in arguments["cmd"]


def test_a_write_is_an_add_file_patch():
    conversation = Conversation(
        system="", prompt="", tools={"exec_command": EXEC_COMMAND}, harness="codex"
    )
    from agentab.offline_model.toolsets import tool_call

    _, arguments = tool_call("write", {"path": "N.md", "content": "a\nb\n"}, conversation)
    assert arguments["cmd"] == (
        "apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: N.md\n+a\n+b\n*** End Patch\nPATCH"
    )


def test_an_offered_custom_apply_patch_tool_gets_a_custom_tool_call_with_the_patch(tmp_path):
    patch_tool = {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}
    tools = [*CODEX_TOOLS, patch_tool]
    earlier = [earlier_reply("c1", "cat calc.py", CALC)]
    with serve("demo", 7, tmp_path / "log.jsonl", harness="codex") as base_url:
        status, raw = post(base_url, responses_body(earlier=earlier, tools=tools))
    assert status == 200
    (call,) = [i for i in done_items(sse_events(raw)) if i["type"] == "custom_tool_call"]
    assert call["name"] == "apply_patch" and call["call_id"] == "call_fix"
    assert call["input"].startswith("*** Begin Patch\n*** Update File: calc.py\n")


def test_a_function_apply_patch_tool_gets_the_patch_as_its_input():
    schema = {"type": "object", "properties": {"input": {"type": "string"}}}
    tools = {"exec_command": EXEC_COMMAND, "apply_patch": schema}
    conversation = Conversation(
        system="", prompt="", tools=tools, tool_outputs=(CALC,), harness="codex"
    )
    steps = load_policy("demo").plan(conversation, 7)
    (edit,) = [c for r in steps for c in r.tool_calls if c.name == "apply_patch"]
    jsonschema.validate(edit.input, schema)
    assert edit.input["input"].startswith("*** Begin Patch\n*** Update File: calc.py")


@pytest.mark.parametrize("effort, thinking", [("none", None), ("high", "high"), (None, None)])
def test_reasoning_effort_is_the_thinking_as_sent(effort, thinking):
    body = responses_body(effort=effort)
    if effort is None:
        body["reasoning"] = {"summary": "auto"}  # what Codex sends with no effort configured
    assert openai_responses.conversation(body).thinking == thinking


def test_the_final_reply_carries_a_reasoning_summary_only_when_reasoning_was_asked(tmp_path):
    with serve("echo", 1, tmp_path / "log.jsonl") as base_url:
        _, with_effort = post(base_url, responses_body(effort="high"))
        _, without = post(base_url, responses_body(effort="none"))
    reasoning = [i for i in done_items(sse_events(with_effort)) if i["type"] == "reasoning"]
    assert reasoning[0]["summary"][0]["text"] == "A short thought."
    assert [i["type"] for i in done_items(sse_events(without))] == ["message"]


def test_a_non_streamed_request_gets_the_whole_response(tmp_path):
    with serve("echo", 1, tmp_path / "log.jsonl") as base_url:
        status, raw = post(base_url, responses_body(stream=False, effort="none"))
    answer = json.loads(raw)
    assert status == 200 and answer["object"] == "response" and answer["status"] == "completed"
    assert answer["output"][0]["content"][0]["text"] == "Nothing to do."
    assert answer["usage"]["input_tokens"] > 0


def test_a_provider_error_is_an_openai_error_body(tmp_path):
    with serve("provider-error", 1, tmp_path / "log.jsonl") as base_url:
        status, raw = post(base_url, responses_body())
    assert status == 400
    error = json.loads(raw)["error"]
    assert error["type"] == "invalid_request_error"
    assert "simulated provider error" in error["message"]


def test_only_responses_paths_are_this_wire():
    assert wire_for("POST", "/v1/responses") is openai_responses
    assert wire_for("POST", "/v1/chat/completions") is not openai_responses
    assert wire_for("GET", "/v1/responses") is None


def run_tests_rate(system: str, seeds: range) -> float:
    policy = load_policy("demo")
    runs = 0
    for seed in seeds:
        conversation = Conversation(
            system=system, prompt="", tools={"exec_command": EXEC_COMMAND}, harness="codex"
        )
        commands = [c.input["cmd"] for r in policy.plan(conversation, seed) for c in r.tool_calls]
        runs += "python3 -m unittest" in commands
    return runs / len(seeds)


def test_the_demo_policy_drives_codex_unchanged():
    assert 0.85 <= run_tests_rate(f"You are Codex.\n{RULE}", range(400)) <= 0.95
    assert 0.10 <= run_tests_rate("You are Codex.", range(400)) <= 0.20
