"""Reading Codex's `exec --json` stream into run facts and a transcript, from streams recorded
from the real Codex CLI 0.171.0, and the adapter's settings that need no binary.

The fixtures were captured by running Codex through `agentab.steps.run.run_agent` against the
offline model: `demo-completed` (policy demo, the rule as a context file, thinking high, seed
11: a wrong edit, then the tests fail), `provider-error` (HTTP 400), `flaky` (one 529, then an
answer: Codex retried without a word in its stream), `hang` (killed at a 4 s timeout) and
`server-error` (HTTP 500 on every request: five reconnections, then `turn.failed`).
"""

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.harnesses import get_harness
from agentab.harnesses.base import BrickFile, HarnessFault, Installation, RunSpec, StreamFacts
from agentab.harnesses.codex import codex_transcript, read_codex_stream, toml_value

FIXTURES = Path(__file__).parent / "fixtures" / "codex"
RECORDED_CLONE = Path("/tmp/codexprobe/rec/demo-completed/clone")  # the clone it ran in
codex = get_harness("codex")


def facts_of(name: str) -> StreamFacts:
    return read_codex_stream(FIXTURES / f"{name}.jsonl")


def test_completed_run_counts_turns_tools_and_tokens_but_no_cost():
    facts = facts_of("demo-completed")
    assert facts.turns == 4
    assert facts.tool_calls == {"command_execution": 2, "file_change": 1}
    assert facts.tokens["input"] > 10000 and facts.tokens["output"] > 0
    assert facts.cost_usd is None  # Codex reports tokens only
    assert facts.final_message == "I fixed `mean` in calc.py: it now divides by len(values)."
    assert facts.stop_reason == "completed" and facts.settled
    assert facts.thinking_applied is None  # the stream never says which effort was used
    assert any("Model metadata for `demo` not found" in e for e in facts.errors)  # a warning
    assert codex.classify(facts, 0, False).as_dict() == {"status": "completed", "reason": None}


def test_the_task_opens_the_transcript_as_the_run_gave_it():
    # Codex's stream never repeats the prompt: the adapter puts the task first, as for Claude
    # Code, so the trajectory begins where the conversation began.
    lines = codex_transcript(FIXTURES / "demo-completed.jsonl", RECORDED_CLONE, "Fix mean.")
    assert lines[0] == {"type": "message", "role": "user", "text": "Fix mean.", "tool_calls": []}
    assert lines[1:] == codex_transcript(FIXTURES / "demo-completed.jsonl", RECORDED_CLONE)


def test_the_transcript_has_the_replies_their_calls_and_results_in_order():
    lines = codex_transcript(FIXTURES / "demo-completed.jsonl", RECORDED_CLONE)
    assert [(line["type"], line.get("role")) for line in lines] == [
        ("message", "assistant"),
        ("tool_result", None),
        ("message", "assistant"),
        ("tool_result", None),
        ("message", "assistant"),
        ("tool_result", None),
        ("message", "assistant"),
    ]
    read, edit, run, final = (line for line in lines if line["type"] == "message")
    assert read["text"] == "Let me look at calc.py first."
    assert [(c["kind"], c["command"]) for c in read["tool_calls"]] == [("run", "cat calc.py")]
    assert edit["tool_calls"][0]["kind"] == "edit"
    assert edit["tool_calls"][0]["input"] == {"changes": [{"path": "calc.py", "kind": "update"}]}
    assert run["tool_calls"][0]["command"] == "python3 -m unittest"  # what behaviour.py reads
    tests_result = lines[5]
    assert tests_result["is_error"] and "FAILED (failures=2)" in tests_result["output"]
    assert final["tool_calls"] == [] and final["text"].startswith("I fixed")
    assert str(RECORDED_CLONE) not in json.dumps(lines)  # validators are blind to the clone


def test_a_provider_error_is_a_failed_run():
    facts = facts_of("provider-error")
    assert facts.stop_reason == "failed"
    assert "simulated provider error" in facts.errors[-1]
    outcome = codex.classify(facts, 1, False)  # Codex exits 1 on turn.failed
    assert outcome.status == "failed" and outcome.reason.startswith("agent-error: ")


def test_an_error_codex_retried_away_does_not_decide_the_outcome():
    facts = facts_of("flaky")
    assert facts.turns == 1 and facts.final_message == "Answered after a retry."
    assert codex.classify(facts, 0, False).status == "completed"


def test_a_server_error_codex_kept_retrying_is_a_fault():
    facts = facts_of("server-error")
    assert facts.stop_reason == "failed"
    assert sum(e.startswith("Reconnecting...") for e in facts.errors) == 5
    with pytest.raises(HarnessFault, match="high demand"):
        codex.classify(facts, 1, False)


@pytest.mark.parametrize(
    "message",
    [
        "exceeded retry limit, last status: 429 Too Many Requests",
        "unexpected status 503 Service Unavailable: busy, url: http://127.0.0.1:1/v1/responses",
        "Connection failed: error sending request",
        "Missing environment variable: `OPENAI_API_KEY`.",
    ],
)
def test_transient_and_setup_errors_are_faults_without_a_retry_notice(tmp_path, message):
    stream = tmp_path / "stream.jsonl"
    stream.write_text(json.dumps({"type": "turn.failed", "error": {"message": message}}) + "\n")
    with pytest.raises(HarnessFault):
        codex.classify(read_codex_stream(stream), 1, False)


def test_the_status_in_a_failure_message_is_the_error_status(tmp_path):
    stream = tmp_path / "stream.jsonl"
    message = "unexpected status 401 Unauthorized: bad key, url: http://127.0.0.1:1/v1/responses"
    stream.write_text(json.dumps({"type": "turn.failed", "error": {"message": message}}) + "\n")
    facts = read_codex_stream(stream)
    assert facts.error_status == 401
    assert codex.classify(facts, 1, False).status == "failed"


def test_timeout_is_a_failed_outcome():
    facts = facts_of("hang")
    assert facts.turns == 0 and facts.stop_reason == ""
    assert codex.classify(facts, None, True).as_dict() == {"status": "failed", "reason": "timeout"}


def test_an_exit_without_a_finished_turn_is_a_fault():
    facts = facts_of("hang")
    with pytest.raises(HarnessFault):
        codex.classify(facts, 0, False)
    with pytest.raises(HarnessFault, match="code 1"):
        codex.classify(StreamFacts(), 1, False)


# ------------------------------------------------------------------ prepare, without a binary


def installation(tmp_path: Path) -> Installation:
    root = tmp_path / "install"
    binary = root / "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin"
    binary.mkdir(parents=True)
    (binary / "codex").write_text("")
    return Installation("codex", "0.171.0", root, root / "codex.js")


def spec(tmp_path: Path, thinking="high", bricks=(), **changes) -> RunSpec:
    clone = tmp_path / "clone"
    clone.mkdir(exist_ok=True)
    offline = RunSpec(
        clone=clone,
        scratch=tmp_path / "scratch",
        prompt="-starts with a dash",
        provider="offline",
        model="demo",
        thinking=thinking,
        timeout_s=60,
        bricks=tuple(bricks),
        model_base_url="http://127.0.0.1:1",
    )
    return replace(offline, **changes)


def config_of(argv: list[str]) -> dict:
    """The -c overrides of an argv, parsed as Codex parses them (TOML values)."""
    pairs = [argv[i + 1] for i, word in enumerate(argv) if word == "-c"]
    return {
        key: tomllib.loads(f"v = {value}")["v"] for key, value in (p.split("=", 1) for p in pairs)
    }


def brick(kind: str, path: Path) -> BrickFile:
    return BrickFile(kind, f"bricks/{path.name}", path, "0" * 64)


@pytest.mark.parametrize(
    "level, effort, sent",
    [("off", "none", None), ("minimal", "minimal", "minimal"), ("high", "high", "high")]
    + [("xhigh", "xhigh", "xhigh"), ("low", "low", "low"), ("medium", "medium", "medium")],
)
def test_thinking_is_the_reasoning_effort_and_sent_thinking_says_what_the_wire_reads(
    tmp_path, level, effort, sent
):
    invocation = codex.prepare(spec(tmp_path, thinking=level), installation(tmp_path))
    assert config_of(invocation.argv)["model_reasoning_effort"] == effort
    assert codex.sent_thinking(level, "demo") == sent


def test_a_level_codex_cannot_express_is_refused_by_name(tmp_path):
    with pytest.raises(AgentabError, match="agent.thinking") as refused:
        codex.prepare(spec(tmp_path, thinking="max"), installation(tmp_path))
    assert "xhigh" in str(refused.value)


def test_the_run_is_isolated_and_the_prompt_is_never_taken_for_a_flag(tmp_path):
    invocation = codex.prepare(spec(tmp_path), installation(tmp_path))
    argv = invocation.argv
    assert argv[1:3] == ["exec", "--json"] and argv[-2:] == ["--", "-starts with a dash"]
    for flag in ("--ephemeral", "--ignore-user-config", "--ignore-rules", "--strict-config"):
        assert flag in argv
    disabled = {argv[i + 1] for i, word in enumerate(argv) if word == "--disable"}
    assert disabled >= {"unbounded_connection_retries", "plugins"}
    config = config_of(argv)
    assert config["project_doc_max_bytes"] == 0
    assert config["skills.bundled.enabled"] is False
    assert config["approval_policy"] == "never"
    provider = config[f"model_providers.{config['model_provider']}"]
    assert provider == {
        "name": "offline",
        "base_url": "http://127.0.0.1:1/v1",
        "wire_api": "responses",
    }
    scratch = tmp_path / "scratch"
    assert invocation.env["CODEX_HOME"].startswith(str(scratch))
    assert invocation.env["HOME"].startswith(str(scratch))
    assert invocation.env["TMPDIR"].startswith(str(scratch))


def test_skills_of_the_clone_are_disabled_by_path(tmp_path):
    clone = tmp_path / "clone"
    for folder in (".agents/skills/a", ".agents/skills/deep/b", ".codex/skills/c"):
        (clone / folder).mkdir(parents=True)
        (clone / folder / "SKILL.md").write_text("---\nname: x\ndescription: y\n---\n")
    config = config_of(codex.prepare(spec(tmp_path), installation(tmp_path)).argv)
    disabled = {Path(entry["path"]).relative_to(clone) for entry in config["skills.config"]}
    assert disabled == {
        Path(".agents/skills/a/SKILL.md"),
        Path(".agents/skills/deep/b/SKILL.md"),
        Path(".codex/skills/c/SKILL.md"),
    }
    assert all(entry["enabled"] is False for entry in config["skills.config"])


def test_bricks_by_explicit_path(tmp_path):
    rule = tmp_path / "rule.md"
    rule.write_text('Always run "the tests"\\ now.\n')
    second = tmp_path / "second.md"
    second.write_text("Second rule.\n")
    skill = tmp_path / "my-skill"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: my-skill\ndescription: d\n---\n")
    (skill / "scripts" / "go.sh").write_text("echo go\n")
    role = tmp_path / "reviewer.toml"
    role.write_text('description = "Reviews."\n')
    bricks = [brick("context_files", rule), brick("context_files", second)]
    bricks += [brick("skills", skill), brick("agents", role)]
    invocation = codex.prepare(spec(tmp_path, bricks=bricks), installation(tmp_path))
    config = config_of(invocation.argv)
    assert config["developer_instructions"] == 'Always run "the tests"\\ now.\n\nSecond rule.'
    assert config["agents.reviewer"] == {"config_file": str(role)}
    codex_home = Path(invocation.env["CODEX_HOME"])
    assert invocation.files[codex_home / "skills/my-skill/scripts/go.sh"] == "echo go\n"
    assert set(invocation.passed_as) == {b.rel for b in bricks}


@pytest.mark.parametrize("kind, name", [("extensions", "guard.ts"), ("agents", "reviewer.md")])
def test_a_brick_codex_cannot_take_by_path_is_refused_with_the_reason(tmp_path, kind, name):
    path = tmp_path / name
    path.write_text("x\n")
    with pytest.raises(AgentabError, match=kind) as refused:
        codex.prepare(spec(tmp_path, bricks=[brick(kind, path)]), installation(tmp_path))
    assert "Codex" in str(refused.value)


def test_a_provider_key_reaches_codex_but_not_the_commands_it_runs(tmp_path):
    real = spec(tmp_path, provider="openai", api_key="sk-secret")
    invocation = codex.prepare(real, installation(tmp_path))
    assert invocation.env["OPENAI_API_KEY"] == "sk-secret"
    assert invocation.env_for_record()["OPENAI_API_KEY"] == "<secret>"
    config = config_of(invocation.argv)
    assert config["shell_environment_policy.exclude"] == ["OPENAI_API_KEY"]
    assert config["model_providers.agentab"]["env_key"] == "OPENAI_API_KEY"
    assert "sk-secret" not in json.dumps(invocation.argv)


def test_a_provider_without_a_responses_endpoint_is_refused(tmp_path):
    other = spec(tmp_path, provider="anthropic", model_base_url=None)
    with pytest.raises(AgentabError, match="agent.provider"):
        codex.prepare(other, installation(tmp_path))


@pytest.mark.parametrize("text", ['a "quoted" \\ back\nslash\ttab', "ünïcode ✓ \x01\x7f"])
def test_toml_values_read_back_as_written(text):
    value = {"s": text, "n": [1, True, {"k-1": "v"}]}
    assert tomllib.loads(f"v = {toml_value(value)}")["v"] == value


def test_the_clone_path_is_taken_out_but_a_sibling_folder_is_kept():
    from agentab.harnesses.codex import relative_to

    strings = ["/x/clone/a.py", "cd /x/clone && ls", "PWD=/x/clone\n", "/x/clone2/b", "/x/clone.b"]
    assert relative_to(strings, Path("/x/clone")) == [
        "a.py",
        "cd . && ls",
        "PWD=.\n",
        "/x/clone2/b",
        "/x/clone.b",
    ]


def test_a_brick_that_is_not_text_is_refused_by_name(tmp_path):
    skill = tmp_path / "img-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: img-skill\ndescription: d\n---\n")
    (skill / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(AgentabError, match="logo.png"):
        codex.prepare(spec(tmp_path, bricks=[brick("skills", skill)]), installation(tmp_path))


def test_which_bricks_codex_refuses_is_known_without_a_run():
    from agentab.harnesses.codex import brick_refusal

    assert brick_refusal("context_files", Path("rule.md")) is None
    assert brick_refusal("skills", Path("bricks/my-skill")) is None
    assert brick_refusal("agents", Path("reviewer.toml")) is None
    assert "TOML" in brick_refusal("agents", Path("reviewer.md"))[0]
    assert "extension" in brick_refusal("extensions", Path("guard.ts"))[0]
    assert brick_refusal("themes", Path("x")) is not None


def test_a_provider_without_a_responses_api_is_refused_even_behind_the_recording_proxy(
    tmp_path,
):
    codex, installed = get_harness("codex"), installation(tmp_path)
    proxied = spec(tmp_path, provider="groq", model_base_url="http://127.0.0.1:2")
    with pytest.raises(AgentabError, match="knows no Responses endpoint for provider 'groq'"):
        codex.prepare(proxied, installed)
    openai = codex.prepare(replace(proxied, provider="openai"), installed)
    provider = config_of(openai.argv)["model_providers.agentab"]
    assert provider["base_url"] == "http://127.0.0.1:2/v1"  # the proxy, the API's path after it


def test_one_adapter_serves_two_runs_each_transcript_relative_to_its_own_clone(tmp_path):
    # The run's state is an argument: preparing another run in between changes nothing.
    recorded = spec(tmp_path, clone=RECORDED_CLONE)
    (tmp_path / "other").mkdir()
    codex.prepare(spec(tmp_path / "other"), installation(tmp_path / "other"))
    lines = codex.transcript(FIXTURES / "demo-completed.jsonl", recorded)
    task = codex_transcript(FIXTURES / "demo-completed.jsonl", RECORDED_CLONE, recorded.prompt)
    assert lines == task
    assert str(RECORDED_CLONE) not in json.dumps(lines)
    assert str(RECORDED_CLONE) in json.dumps(codex.transcript(FIXTURES / "demo-completed.jsonl"))
