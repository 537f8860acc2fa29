"""A request that reaches the model while a tool call of the harness's runs, and carries none of
its results, was sent by something the tool started: the offline model and the recording proxy
log it with `"origin": "tool"`, for every wire API, streamed or not."""

from __future__ import annotations

import http.client
import json
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agentab.offline_model import serve, wire
from agentab.offline_model.origin import HARNESS, TOOL, ToolCallWatch
from agentab.run.recording_proxy import recording

POLICY = """
[policy]
description = "Calls bash once, then finishes."

[[steps]]
id = "look"
say = "Looking."
tool = "bash"
input = { command = "ls" }

[final]
text = "Done."
"""


def anthropic(calls: set[str], stream: bool) -> tuple[str, dict]:
    messages = [{"role": "user", "content": "go"}]
    for call in sorted(calls):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": call, "name": "bash", "input": {}}]})  # fmt: skip
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": "ok"}]})  # fmt: skip
    tools = [{"name": "bash", "input_schema": {"type": "object"}}]
    return "/v1/messages", {"model": "m", "messages": messages, "tools": tools, "stream": stream}


def openai_chat(calls: set[str], stream: bool) -> tuple[str, dict]:
    messages = [{"role": "user", "content": "go"}]
    for call in sorted(calls):
        function = {"name": "bash", "arguments": "{}"}
        messages.append({"role": "assistant", "tool_calls": [{"id": call, "function": function}]})
        messages.append({"role": "tool", "tool_call_id": call, "content": "ok"})
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]
    return "/v1/chat/completions", {"model": "m", "messages": messages, "tools": tools,
                                    "stream": stream}  # fmt: skip


def responses(calls: set[str], stream: bool) -> tuple[str, dict]:
    items: list[dict] = [{"type": "message", "role": "user", "content": "go"}]
    for call in sorted(calls):
        items.append({"type": "function_call", "call_id": call, "name": "bash", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": call, "output": "ok"})
    tools = [{"type": "function", "name": "bash", "parameters": {}}]
    return "/v1/responses", {"model": "m", "input": items, "tools": tools, "stream": stream}


def gemini(calls: set[str], stream: bool) -> tuple[str, dict]:
    contents = [{"role": "user", "parts": [{"text": "go"}]}]
    for call in sorted(calls):
        contents.append({"role": "model", "parts": [
            {"functionCall": {"name": "bash", "args": {}, "id": call}}]})  # fmt: skip
        contents.append({"role": "user", "parts": [
            {"functionResponse": {"name": "bash", "id": call, "response": {}}}]})  # fmt: skip
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    tools = [{"functionDeclarations": [{"name": "bash", "parameters": {}}]}]
    return f"/v1beta/models/m:{method}", {"contents": contents, "tools": tools}


APIS = {"anthropic-messages": anthropic, "openai-chat": openai_chat}
APIS.update({"openai-responses": responses, "gemini": gemini})


def post(base_url: str, path: str, body: dict) -> bytes:
    connection = http.client.HTTPConnection(urlsplit(base_url).netloc, timeout=10)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    reply = connection.getresponse()
    assert reply.status == 200
    return reply.read()


def calls_of(api, data: bytes) -> set[str]:
    """The tool calls a reply asks for, as the harness reads them."""
    if data.lstrip().startswith(b"{"):
        return api.calls_in(json.loads(data))
    events = [line[5:] for line in data.splitlines() if line.startswith(b"data:")]
    payloads = [json.loads(event) for event in events if event.strip() != b"[DONE]"]
    return set().union(*(api.calls_in(payload) for payload in payloads))


def origins(log: Path) -> list[str]:
    return [json.loads(line)["origin"] for line in log.read_text().splitlines()]


@pytest.mark.parametrize("through_proxy", [False, True], ids=["offline", "proxy"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", sorted(APIS))
def test_a_request_sent_while_a_tool_call_runs_is_the_tools(tmp_path, name, stream, through_proxy):
    (tmp_path / "bash.toml").write_text(POLICY)
    request, api = APIS[name], wire.by_name(name)
    model_log, proxy_log = tmp_path / "model.jsonl", tmp_path / "proxy.jsonl"
    with ExitStack() as stack:
        url = stack.enter_context(serve(str(tmp_path / "bash.toml"), 1, model_log))
        if through_proxy:
            url = stack.enter_context(recording(url, proxy_log, 10, "sk-test-key-0123456789"))
        calls = calls_of(api, post(url, *request(set(), stream)))  # the harness's first turn
        assert calls  # the model asked for bash: it runs now
        post(url, *request(set(), stream))  # a `curl` from inside bash: a conversation of its own
        post(url, *request(calls, stream))  # the harness, with bash's result
        post(url, *request(set(), stream))  # no tool runs now: taken for the harness's
    assert origins(model_log) == [HARNESS, TOOL, HARNESS, HARNESS]
    if through_proxy:
        assert origins(proxy_log) == [HARNESS, TOOL, HARNESS, HARNESS]
    times = [json.loads(line)["at"] for line in model_log.read_text().splitlines()]
    assert times == sorted(times) and all(isinstance(t, float) for t in times)


def test_a_request_with_a_forged_result_of_another_call_is_still_the_tools():
    api = wire.by_name("openai-chat")
    watch = ToolCallWatch()
    assert watch.origin(api, openai_chat(set(), False)[1]) == HARNESS
    watch.asked({"call_a1"})
    assert watch.origin(api, openai_chat({"call_other"}, False)[1]) == TOOL
    assert watch.origin(api, openai_chat({"call_a1"}, False)[1]) == HARNESS
    assert watch.origin(None, {"anything": 1}) == HARNESS  # no call runs any more


def test_a_judges_forced_verdict_runs_no_tool(tmp_path):
    """The offline model also serves judges: a retried judge request is the judge's own."""
    body = {
        "model": "m",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": "judge this"}],
        "tools": [{"name": "record_verdict", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "record_verdict"},
    }
    log = tmp_path / "judge.jsonl"
    with serve("demo", 1, log) as url:
        post(url, "/v1/messages", body)
        post(url, "/v1/messages", body)
    assert origins(log) == [HARNESS, HARNESS]
