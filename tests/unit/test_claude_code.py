"""The Claude Code adapter without its binary: the stream reader on streams recorded from the real
Claude Code 2.1.332, the thinking mapping, how bricks are passed, and the offline model's side.

Fixtures (`fixtures/claude_code/`), each recorded against the offline model: `demo-rule-high`
(policy demo, the rule brick, thinking high), `provider-error-400` (HTTP 400 on every request),
`overloaded-529` (HTTP 529 on every request, after Claude Code's own ten retries),
`background-agents` (a policy that starts a background agent: four `result` lines).
"""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.harnesses import get_harness
from agentab.harnesses.base import BrickFile, HarnessFault, RunSpec
from agentab.harnesses.claude_code import (
    claude_transcript,
    read_claude_stream,
    thinking_family,
    thinking_settings,
)
from agentab.offline_model.policy import Conversation, load_policy
from agentab.offline_model.toolsets import tool_call
from agentab.offline_model.wire import anthropic_messages

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"
claude = get_harness("claude-code")


def test_completed_run_counts_turns_tools_tokens_and_cost():
    facts = read_claude_stream(FIXTURES / "demo-rule-high.jsonl")
    assert facts.turns == 4
    assert facts.tool_calls == {"Read": 1, "Edit": 1, "Bash": 1}
    assert facts.tokens["input"] > 10000 and facts.tokens["output"] > 0
    assert facts.cost_usd is not None and facts.cost_usd > 0
    assert facts.final_message.startswith("I fixed `mean` in calc.py")
    assert facts.stop_reason == "end_turn" and facts.errors == []
    assert claude.classify(facts, 0, False).as_dict() == {"status": "completed", "reason": None}


def test_transcript_names_tool_kinds_and_the_test_command():
    lines = claude_transcript(FIXTURES / "demo-rule-high.jsonl")
    calls = [c for line in lines if line["type"] == "message" for c in line["tool_calls"]]
    assert [(c["tool"], c["kind"]) for c in calls] == [
        ("Read", "read"),
        ("Edit", "edit"),
        ("Bash", "run"),
    ]
    assert calls[-1]["command"] == "python3 -m unittest"
    results = [line for line in lines if line["type"] == "tool_result"]
    assert [r["tool"] for r in results] == ["Read", "Edit", "Bash"]
    assert "OK" in results[-1]["output"] and not results[-1]["is_error"]
    assert lines[-1]["text"].startswith("I fixed `mean`")
    assert all("system" not in json.dumps(line) for line in lines)


def test_the_transcript_opens_with_the_task_and_says_no_wrong_output_count():
    lines = claude_transcript(FIXTURES / "demo-rule-high.jsonl", task="Fix mean().")
    assert lines[0]["role"] == "user" and lines[0]["text"] == "Fix mean()."
    # The stream gives each message's usage at its first token: its input, never its output.
    assert lines[1]["usage"] == {"input": 11878}


def test_several_result_lines_the_last_decides_and_tokens_add_up():
    path = FIXTURES / "background-agents.jsonl"
    results = [json.loads(x) for x in path.read_text().splitlines() if '"type":"result"' in x]
    assert len(results) == 4  # a background agent finished after the first result
    facts = read_claude_stream(path)
    assert facts.cost_usd == results[-1]["total_cost_usd"]
    assert facts.tokens["input"] > results[-1]["usage"]["input_tokens"]  # subagents included
    assert facts.final_message == results[-1]["result"]
    assert facts.tool_calls == {"Agent": 1}  # the subagents' own calls are not the agent's
    assert claude.classify(facts, 0, False).status == "completed"


def test_an_invalid_request_is_a_failed_run():
    facts = read_claude_stream(FIXTURES / "provider-error-400.jsonl")
    assert facts.stop_reason == "error" and facts.error_status == 400
    outcome = claude.classify(facts, 1, False)
    assert outcome.status == "failed" and "simulated provider error" in outcome.reason


def test_an_overloaded_provider_is_a_fault():
    facts = read_claude_stream(FIXTURES / "overloaded-529.jsonl")
    assert facts.error_status == 529
    with pytest.raises(HarnessFault, match="529"):
        claude.classify(facts, 1, False)


def test_timeout_is_failed_and_no_result_is_a_fault(tmp_path):
    empty = tmp_path / "stream.jsonl"
    empty.write_text('{"type":"system","subtype":"init"}\n')
    facts = read_claude_stream(empty)
    assert claude.classify(facts, None, True).as_dict() == {"status": "failed", "reason": "timeout"}
    with pytest.raises(HarnessFault, match="without a result"):
        claude.classify(facts, 1, False)


@pytest.mark.parametrize(
    "model, family",
    [
        ("demo", "adaptive"),
        ("claude-sonnet-4-6", "adaptive"),
        ("claude-opus-4-1-20250805", "adaptive"),  # Claude Code sends it as claude-opus-5-5
        ("claude-sonnet-4-5-20250929", "budget"),
        ("claude-haiku-4-5-20251001", "budget"),
        ("claude-sonnet-4-20250514", "budget"),
        ("claude-opus-4-5-20251101", "budget+effort"),
        ("claude-3-7-sonnet-20250219", "none"),
    ],
)
def test_model_families(model, family):
    assert thinking_family(model) == family


def test_thinking_settings_and_what_the_model_reads():
    assert thinking_settings("off", "demo") == (
        [],
        {"CLAUDE_CODE_DISABLE_THINKING": "1", "MAX_THINKING_TOKENS": "0"},
    )
    assert thinking_settings("high", "demo") == (["--effort", "high"], {})
    assert thinking_settings("low", "claude-sonnet-4-5") == ([], {"MAX_THINKING_TOKENS": "4000"})
    # The receipt compares sent_thinking with what the wire module reads from a request.
    adaptive = {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}}
    assert anthropic_messages.anthropic_thinking(adaptive) == claude.sent_thinking("high", "demo")
    budget = {"thinking": {"type": "enabled", "budget_tokens": 4000}}
    assert anthropic_messages.anthropic_thinking(budget) == claude.sent_thinking(
        "low", "claude-sonnet-4-5-20250929"
    )
    off = {"output_config": {"effort": "high"}}  # no thinking field: effort alone is not thinking
    assert anthropic_messages.anthropic_thinking(off) is claude.sent_thinking("off", "demo") is None


@pytest.mark.parametrize(
    "level, model", [("max", "claude-sonnet-4-5"), ("high", "claude-3-5-haiku")]
)
def test_a_level_the_model_family_cannot_send_is_refused(level, model):
    with pytest.raises(AgentabError, match="agent.thinking"):
        thinking_settings(level, model)


def spec_of(tmp_path, bricks=(), thinking="off") -> RunSpec:
    return RunSpec(
        clone=tmp_path / "clone",
        scratch=tmp_path / "scratch",
        prompt="Fix it.",
        provider="offline",
        model="demo",
        thinking=thinking,
        timeout_s=60,
        bricks=tuple(bricks),
        model_base_url="http://127.0.0.1:9",
    )


def brick(tmp_path, kind, rel, text=None, files=None) -> BrickFile:
    path = tmp_path / rel
    if files:
        for name, content in files.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(content)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return BrickFile(kind, rel, path, "0" * 64)


def installation(tmp_path):
    from agentab.harnesses.base import Installation

    return Installation("claude-code", "2.1.332", tmp_path, tmp_path / "claude.exe")


def test_prepare_constructs_the_environment_and_switches_discovery_off(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTAB_CANARY", "caller")
    invocation = claude.prepare(spec_of(tmp_path), installation(tmp_path))
    env = invocation.env
    scratch = tmp_path / "scratch"
    assert env["HOME"] == str(scratch / "home") and env["CLAUDE_CONFIG_DIR"] == str(
        scratch / "config"
    )
    assert env["TMPDIR"] == env["CLAUDE_CODE_TMPDIR"] == str(scratch / "tmp")
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9" and env["IS_SANDBOX"] == "1"
    assert env["DISABLE_AUTOUPDATER"] == env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert "AGENTAB_CANARY" not in env
    assert invocation.env_for_record()["ANTHROPIC_API_KEY"] == "<secret>"
    # Confined, it runs as the sandbox's user, not root: bypass mode needs no IS_SANDBOX.
    confined = claude.prepare(replace(spec_of(tmp_path), confined=True), installation(tmp_path))
    assert "IS_SANDBOX" not in confined.env
    argv = invocation.argv
    assert argv[argv.index("--setting-sources") + 1] == ""
    assert "--strict-mcp-config" in argv and argv[-2:] == ["--", "Fix it."]
    assert argv[1:5] == ["-p", "--output-format", "stream-json", "--verbose"]


def test_bricks_are_passed_by_explicit_path(tmp_path):
    bricks = [
        brick(tmp_path, "context_files", "bricks/rule.md", "RULE"),
        brick(tmp_path, "context_files", "bricks/other.md", "OTHER\n"),
        brick(
            tmp_path,
            "agents",
            "bricks/reviewer.md",
            "---\nname: reviewer\ndescription: Reviews.\ntools: Read, Bash\n---\nYou review.\n",
        ),
        brick(
            tmp_path,
            "skills",
            "bricks/skill-a",
            files={"SKILL.md": "---\nname: skill-a\ndescription: A.\n---\nx\n"},
        ),
        brick(tmp_path, "extensions", "bricks/mcp.json", json.dumps({"mcpServers": {}})),
    ]
    invocation = claude.prepare(spec_of(tmp_path, bricks), installation(tmp_path))
    argv, scratch = invocation.argv, tmp_path / "scratch"
    # one file holds every context file: Claude Code keeps only the last such flag
    assert argv.count("--append-system-prompt-file") == 1
    joined = argv[argv.index("--append-system-prompt-file") + 1]
    assert joined == str(scratch / "context-files.md")
    assert invocation.files[scratch / "context-files.md"] == "RULE\n\nOTHER"
    agents = json.loads(invocation.files[scratch / "agents.json"])
    assert agents == {
        "reviewer": {"description": "Reviews.", "prompt": "You review.", "tools": ["Read", "Bash"]}
    }
    assert argv[argv.index("--agents") + 1] == str(scratch / "agents.json")
    assert argv[argv.index("--plugin-dir") + 1] == str(scratch / "plugin")
    assert scratch / "plugin" / "skills" / "skill-a" / "SKILL.md" in invocation.files
    assert argv[argv.index("--mcp-config") + 1] == str(tmp_path / "bricks/mcp.json")
    assert invocation.clone_files == {}  # nothing is dropped where discovery would find it


def test_an_extension_claude_code_cannot_take_by_path_is_refused(tmp_path):
    ts = brick(tmp_path, "extensions", "bricks/guard.ts", "export default 1")
    with pytest.raises(AgentabError, match="plugin folder") as error:
        claude.prepare(spec_of(tmp_path, [ts]), installation(tmp_path))
    assert "bricks/guard.ts" in str(error.value.render())


def test_a_cell_is_checked_before_anything_runs(tmp_path):
    ts = brick(tmp_path, "extensions", "bricks/guard.ts", "export default 1")
    with pytest.raises(AgentabError, match="extensions"):
        claude.check_cell("demo", "off", [ts])
    with pytest.raises(AgentabError, match="agent.thinking"):
        claude.check_cell("claude-sonnet-4-5", "max", [])
    bare = brick(tmp_path, "agents", "bricks/bare.md", "no front matter")
    with pytest.raises(AgentabError, match="description"):
        claude.check_cell("demo", "high", [bare])
    claude.check_cell("demo", "high", [brick(tmp_path, "context_files", "bricks/r.md", "R")])


def test_another_provider_is_refused(tmp_path):
    spec = spec_of(tmp_path)
    spec = RunSpec(**{**spec.__dict__, "provider": "openai"})
    with pytest.raises(AgentabError, match="agent.provider"):
        claude.prepare(spec, installation(tmp_path))


# ------------------------------------------------------------------ the offline model's side

TOOLS = {name: {} for name in ("Read", "Edit", "Write", "Bash", "Agent")}


def test_actions_become_claude_code_tools_with_absolute_paths():
    conversation = Conversation(system="x\n - Primary working directory: /w/clone\n", prompt="")
    conversation = Conversation(
        **{**conversation.__dict__, "tools": TOOLS, "harness": "claude-code"}
    )
    assert tool_call("read", {"path": "calc.py"}, conversation) == (
        "Read",
        {"file_path": "/w/clone/calc.py"},
    )
    edit = tool_call("edit", {"path": "calc.py", "old": "a", "new": "b"}, conversation)
    assert edit == ("Edit", {"file_path": "/w/clone/calc.py", "old_string": "a", "new_string": "b"})
    assert tool_call("run", {"command": "ls"}, conversation)[0] == "Bash"


def test_the_demo_policy_drives_claude_code_unchanged():
    body = {
        "system": [{"type": "text", "text": "You are. always run the test suite"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Fix it."}]},
            {"role": "system", "content": "Primary working directory: /w/clone"},
        ],
        "tools": [{"name": name, "input_schema": {}} for name in TOOLS],
    }
    conversation = replace(anthropic_messages.conversation(body), harness="claude-code")
    assert "Primary working directory" in conversation.system
    assert "Primary working directory" not in conversation.prompt
    plan = load_policy("demo").plan(conversation, seed=1)
    assert [reply.tool_calls[0].name for reply in plan][:2] == ["Read", "Edit"]


def test_token_counting_is_a_side_reply():
    answer = anthropic_messages.side_reply(
        "POST", "/v1/messages/count_tokens", {"messages": [{"role": "user", "content": "hi"}]}, None
    )
    assert answer[0] == 200 and answer[1]["input_tokens"] >= 1
    assert anthropic_messages.side_reply("POST", "/v1/messages", {}, None) is None


@pytest.mark.parametrize(
    "head, tools, description",
    [
        ("tools: Read, Grep", ["Read", "Grep"], "Reviews."),
        ("tools: [Read, Grep]", ["Read", "Grep"], "Reviews."),  # YAML's list, not a string
        ("tools:\n  - Read\n  - Grep", ["Read", "Grep"], "Reviews."),
        ("description: >\n  Reviews\n  twice.", None, "Reviews twice."),
        ("description: Use it when: a review", None, "Use it when: a review"),  # not YAML
    ],
)
def test_an_agent_definition_is_read_from_its_yaml_front_matter(tmp_path, head, tools, description):
    from agentab.harnesses.claude_code import agent_definition

    lines = ["name: reviewer", head] + ([] if "description" in head else ["description: Reviews."])
    path = tmp_path / "reviewer.md"
    path.write_text("\ufeff---\n" + "\n".join(lines) + "\n---\nReview the change.\n")
    name, definition = agent_definition(BrickFile("agents", "reviewer.md", path, "0" * 64), path)
    assert name == "reviewer" and definition["prompt"] == "Review the change."
    assert definition["description"] == description and definition.get("tools") == tools
