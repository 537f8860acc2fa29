"""Reading Gemini CLI's stream-json into run facts, from streams recorded from the real Gemini CLI
0.61.0 run through `python -m agentab.steps.run` against the offline model.

`demo-completed` (policy demo, the rule brick, thinking high), `provider-error` (HTTP 400; exit
144 = 400 mod 256), `flaky` (one 529, not retried under `maxAttempts: 1`; exit 17 = 529 mod 256),
`hang` (killed at a 4 s timeout). Also the adapter's own decisions: settings, thinking mapping,
bricks, refusals.
"""

import json
from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.harnesses import get_harness
from agentab.harnesses.base import BrickFile, HarnessFault, Installation, RunSpec, StreamFacts
from agentab.harnesses.gemini import read_gemini_stream
from agentab.offline_model.wire import gemini as gemini_wire

FIXTURES = Path(__file__).parent / "fixtures" / "gemini"
gemini = get_harness("gemini")


def facts_of(name: str) -> StreamFacts:
    return read_gemini_stream(FIXTURES / f"{name}.jsonl")


def test_completed_run_counts_turns_tools_and_tokens_but_no_cost():
    facts = facts_of("demo-completed")
    assert facts.turns == 4
    assert facts.tool_calls == {"read_file": 1, "replace": 1, "run_shell_command": 1}
    assert facts.tokens["input"] > 1000 and facts.tokens["output"] > 0
    assert facts.cost_usd is None  # Gemini CLI reports tokens only
    assert facts.final_message == "I fixed `mean` in calc.py: it now divides by len(values)."
    assert facts.stop_reason == "success" and facts.settled
    assert facts.errors == [] and facts.error_status is None
    assert gemini.classify(facts, 0, False).as_dict() == {"status": "completed", "reason": None}


def test_transcript_is_the_neutral_conversation():
    lines = gemini.transcript(FIXTURES / "demo-completed.jsonl")
    assert [line.get("role", line["type"]) for line in lines] == [
        "user",
        "assistant",
        "tool_result",
        "assistant",
        "tool_result",
        "assistant",
        "tool_result",
        "assistant",
    ]
    kinds = [
        call["kind"] for line in lines if line["type"] == "message" for call in line["tool_calls"]
    ]
    assert kinds == ["read", "edit", "run"]
    run = lines[5]["tool_calls"][0]
    assert run["command"] == "python3 -m unittest" and run["tool"] == "run_shell_command"
    assert lines[6]["tool"] == "run_shell_command" and "Ran 3 tests" in lines[6]["output"]
    assert not any(result.get("is_error") for result in lines if result["type"] == "tool_result")


def test_provider_error_400_is_a_failed_run_whatever_the_exit_code():
    facts = facts_of("provider-error")
    assert facts.stop_reason == "error" and facts.error_status == 400
    assert "simulated provider error" in facts.errors[-1]
    outcome = gemini.classify(facts, 144, False)  # 400 mod 256
    assert outcome.status == "failed" and outcome.reason.startswith("agent-error: ")


def test_a_transient_provider_error_is_a_fault():
    facts = facts_of("flaky")
    assert facts.error_status == 529
    with pytest.raises(HarnessFault, match="529"):
        gemini.classify(facts, 17, False)


@pytest.mark.parametrize("status, fault", [(429, True), (500, True), (503, True), (413, False)])
def test_status_decides_fault_or_outcome(status, fault):
    facts = StreamFacts(stop_reason="error", settled=True, error_status=status, errors=["x"])
    if fault:
        with pytest.raises(HarnessFault):
            gemini.classify(facts, status % 256, False)
    else:
        assert gemini.classify(facts, status % 256, False).status == "failed"


def test_a_network_error_is_a_fault():
    facts = StreamFacts(
        stop_reason="error", settled=True, errors=["exception TypeError: fetch failed"]
    )
    with pytest.raises(HarnessFault, match="network"):
        gemini.classify(facts, 1, False)


def test_timeout_is_a_failed_outcome():
    facts = facts_of("hang")
    assert facts.turns == 0 and not facts.settled
    assert gemini.classify(facts, None, True).as_dict() == {"status": "failed", "reason": "timeout"}


def test_a_crash_without_result_is_a_fault():
    with pytest.raises(HarnessFault, match="without a result"):
        gemini.classify(StreamFacts(), 1, False)


# ------------------------------------------------------------------------ prepare


def make_spec(tmp_path, bricks=(), thinking="off", model="demo", files=()) -> RunSpec:
    clone = tmp_path / "clone"
    clone.mkdir(exist_ok=True)
    for name in files:
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        (clone / name).write_text("x\n")
    import subprocess

    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "add", "-A"], check=True)
    return RunSpec(
        clone=clone,
        scratch=tmp_path / "scratch",
        prompt="Fix it.",
        provider="offline",
        model=model,
        thinking=thinking,
        timeout_s=60,
        bricks=tuple(bricks),
        model_base_url="http://127.0.0.1:9",
    )


INSTALLATION = Installation("gemini", "0.61.0", Path("/x"), Path("/x/gemini.js"))


def settings_of(invocation) -> dict:
    path = next(p for p in invocation.files if p.name == "settings.json")
    return json.loads(invocation.files[path])


def test_prepare_builds_an_isolated_headless_run(tmp_path):
    spec = make_spec(tmp_path)
    invocation = gemini.prepare(spec, INSTALLATION)
    argv = invocation.argv
    assert "--skip-trust" in argv and argv[argv.index("--approval-mode") + 1] == "yolo"
    assert argv[argv.index("--output-format") + 1] == "stream-json"
    assert argv[argv.index("--extensions") + 1] == "none"
    assert invocation.env["GEMINI_CLI_HOME"] == str(spec.scratch / "home")
    assert invocation.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9"
    assert "GEMINI_API_KEY" in invocation.secret_env
    settings = settings_of(invocation)
    assert settings["general"]["maxAttempts"] == 1
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["skills"]["enabled"] is False and settings["telemetry"]["enabled"] is False
    assert settings["context"]["memoryBoundaryMarkers"] == []


@pytest.mark.parametrize(
    "level, model, sent",
    [
        ("off", "demo", None),
        ("minimal", "demo", "budget:512"),
        ("high", "demo", "budget:16384"),
        ("max", "gemini-2.5-pro", "budget:32768"),
        ("low", "gemini-3-flash-preview", "low"),
        ("high", "gemini-3.1-pro-preview", "high"),
    ],
)
def test_thinking_mapping_is_what_the_wire_module_reads(tmp_path, level, model, sent):
    assert gemini.sent_thinking(level, model) == sent
    invocation = gemini.prepare(make_spec(tmp_path, thinking=level, model=model), INSTALLATION)
    override = settings_of(invocation)["modelConfigs"]["overrides"][0]
    assert override["match"] == {"model": model}
    config = override["modelConfig"]["generateContentConfig"]["thinkingConfig"]
    assert gemini_wire.gemini_thinking(config) == sent  # the receipt compares these two


@pytest.mark.parametrize("level", ["off", "xhigh", "max", "extreme"])
def test_levels_gemini_3_cannot_take_are_refused(tmp_path, level):
    with pytest.raises(AgentabError, match="agent.thinking"):
        gemini.prepare(make_spec(tmp_path, thinking=level, model="gemini-3-pro"), INSTALLATION)


def brick(tmp_path, kind, rel, text=None) -> BrickFile:
    path = tmp_path / "scenario" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is not None:
        path.write_text(text)
    return BrickFile(kind, rel, path, "0" * 64)


def test_bricks_are_passed_by_explicit_path(tmp_path):
    context = brick(tmp_path, "context_files", "bricks/rule.md", "RULE\n")
    extension = brick(tmp_path, "extensions", "bricks/ext")
    (extension.path / "gemini-extension.json").parent.mkdir(parents=True, exist_ok=True)
    (extension.path / "gemini-extension.json").write_text('{"name": "guard", "version": "1"}')
    agent = brick(tmp_path, "agents", "bricks/reviewer.md", "---\nname: reviewer\n---\n")
    spec = make_spec(tmp_path, bricks=[context, extension, agent])
    invocation = gemini.prepare(spec, INSTALLATION)
    gemini_dir = spec.scratch / "home" / ".gemini"
    assert invocation.files[gemini_dir / "agentab-context-01-rule.md"] == "RULE\n"
    assert settings_of(invocation)["context"]["fileName"] == ["agentab-context-01-rule.md"]
    assert gemini_dir / "extensions" / "guard" / "gemini-extension.json" in invocation.files
    assert invocation.argv[invocation.argv.index("--extensions") + 1] == "guard"
    assert gemini_dir / "agents" / "reviewer.md" in invocation.files
    assert set(invocation.passed_as) == {"bricks/rule.md", "bricks/ext", "bricks/reviewer.md"}


def test_a_skill_brick_is_refused_naming_the_kind(tmp_path):
    skill = brick(tmp_path, "skills", "bricks/skill")
    with pytest.raises(AgentabError, match="skills.*discovery"):
        gemini.prepare(make_spec(tmp_path, bricks=[skill]), INSTALLATION)


@pytest.mark.parametrize("name", ["GEMINI.md", "src/GEMINI.md"])
def test_an_etalon_gemini_md_is_refused_since_it_would_reach_the_model(tmp_path, name):
    with pytest.raises(AgentabError, match="GEMINI.md"):
        gemini.prepare(make_spec(tmp_path, files=[name]), INSTALLATION)


def test_another_provider_is_refused(tmp_path):
    spec = make_spec(tmp_path)
    from dataclasses import replace

    with pytest.raises(AgentabError, match="agent.provider"):
        gemini.prepare(replace(spec, provider="anthropic"), INSTALLATION)


@pytest.mark.parametrize(
    "message, exit_code, status, fault",
    [
        ("[API Error: offline model: unavailable]", 247, 503, True),
        (
            "[API Error: offline model: rate limited]\nPlease wait and try again later.",
            173,
            429,
            True,
        ),
        ("[API Error: too large]", 157, 413, False),
    ],
)
def test_without_a_code_in_the_message_the_exit_code_gives_the_status(
    message, exit_code, status, fault
):
    # Measured: Gemini CLI prints no code for a 429 or a 503, and exits with status mod 256.
    facts = StreamFacts(stop_reason="error", settled=True, errors=[message])
    if fault:
        with pytest.raises(HarnessFault, match=str(status)):
            gemini.classify(facts, exit_code, False)
    else:
        assert gemini.classify(facts, exit_code, False).status == "failed"
    assert facts.error_status == status


def test_an_exit_code_that_is_no_http_status_stays_unknown():
    from agentab.harnesses.gemini import status_from_exit_code

    assert status_from_exit_code(144) == 400 and status_from_exit_code(17) == 529
    assert status_from_exit_code(100) is None and status_from_exit_code(None) is None


def test_a_prompt_that_gemini_cli_would_run_as_a_slash_command_is_refused(tmp_path):
    from dataclasses import replace

    spec = replace(make_spec(tmp_path), prompt="  /fix the bug")
    with pytest.raises(AgentabError, match="task.prompt"):
        gemini.prepare(spec, INSTALLATION)
