"""The conformance kit: what every harness adapter must do, checked on each one from its own
`prepare`, `command`, `read_stream` and `classify`, with no binary installed.

A new adapter is found by name (`harness_names`) and must pass all of it; what differs between
harnesses (the flags that switch discovery off, the form of an extension) is in the tables
below, one row per harness, so that adding a harness adds a row here (docs/adding-a-harness.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.harnesses import get_harness, harness_names
from agentab.harnesses.base import (
    BrickFile,
    Harness,
    HarnessFault,
    Installation,
    Installer,
    RunSpec,
    StreamFacts,
)
from agentab.harnesses.pi import PiHarness

HARNESSES = harness_names()
FIXTURES = Path(__file__).parent / "fixtures"
CANARY = "conformance-canary-7b1e"

# What switches each harness's own discovery off (the etalon's config, context files, skills,
# user settings): words of its command line, variables of its environment, or a setting of the
# config file agentab writes for the run. Every one must be in the prepared invocation.
DISCOVERY_OFF = {
    "pi": {"argv": ["-nc", "-ne", "-ns", "-np", "-na", "--no-themes", "--no-session"]},
    "claude-code": {
        "argv": ["--setting-sources", "--strict-mcp-config", "--no-session-persistence"],
        "env": {"CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1", "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"},
    },
    "codex": {
        "argv": ["--ignore-user-config", "--ignore-rules", "--ephemeral"],
        "config": ["project_doc_max_bytes=0", "skills.bundled.enabled=false"],
    },
    "gemini": {
        "argv": ["--skip-trust"],
        "config": ['"memoryBoundaryMarkers": []', '"ignoreLocalEnv": true'],
    },
}
# The stop reason a harness's facts carry when its stream ended on a provider error.
ERROR_END = {"pi": "error", "claude-code": "error", "codex": "failed", "gemini": "error"}
# Its recorded stream of a run whose provider refused the request (HTTP 400): the run's outcome.
REFUSED_STREAM = {
    "pi": "pi/provider-error.jsonl",
    "claude-code": "claude_code/provider-error-400.jsonl",
    "codex": "codex/provider-error.jsonl",
    "gemini": "gemini/provider-error.jsonl",
}


def test_every_adapter_is_in_the_kit():
    # A harness added without its rows would pass the kit by skipping it.
    assert set(HARNESSES) == set(DISCOVERY_OFF) == set(ERROR_END) == set(REFUSED_STREAM)


@pytest.fixture(params=HARNESSES)
def adapter(request, monkeypatch) -> Harness:
    harness = get_harness(request.param)
    # No binary: the harness starts as its entry file, wherever its installer would find it.
    monkeypatch.setattr(type(harness), "command", lambda self, inst: [str(inst.entry)])
    return harness


def installation(harness: Harness, tmp_path: Path) -> Installation:
    root = tmp_path / "install"
    return Installation(harness.name, "1.0.0", root, root / "entry")


def run_spec(tmp_path: Path, bricks=(), thinking="high") -> RunSpec:
    clone = tmp_path / "clone"
    clone.mkdir(parents=True, exist_ok=True)
    (clone / "calc.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "add", "-A"], check=True)
    return RunSpec(
        clone=clone,
        scratch=tmp_path / "scratch",
        prompt=f"Fix calc.py. {CANARY}-task",
        provider="offline",
        model="demo",
        thinking=thinking,
        timeout_s=60,
        bricks=tuple(bricks),
        model_base_url="http://127.0.0.1:9",
    )


def everything_passed(invocation) -> str:
    """All the invocation hands the harness, as one text: argv, environment, files written."""
    files = [f"{path}\n{text}" for path, text in invocation.files.items()]
    return "\n".join([*invocation.argv, *map(str, invocation.env.items()), *files])


# ---------------------------------------------------------------------------- isolation


def test_the_environment_is_constructed_and_discovery_is_off(adapter, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTAB_CALLER_CANARY", CANARY)
    spec = run_spec(tmp_path)
    invocation = adapter.prepare(spec, installation(adapter, tmp_path))
    env = invocation.env
    assert CANARY not in json.dumps(env)  # nothing of the caller's environment
    assert Path(env["HOME"]).is_relative_to(spec.scratch)
    assert Path(env["TMPDIR"]).is_relative_to(spec.scratch)
    # Which programs an agent runs must not depend on how agentab was installed.
    assert str(Path(sys.executable).parent) not in env["PATH"].split(":")
    assert env["LC_ALL"] == "C.UTF-8" and env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert all(Path(path).is_relative_to(spec.scratch) for path in invocation.files)
    assert invocation.cwd == spec.clone
    expected = DISCOVERY_OFF[adapter.name]
    assert set(expected.get("argv", [])) <= set(invocation.argv)
    assert expected.get("env", {}).items() <= env.items()
    passed = everything_passed(invocation)
    assert all(setting in passed for setting in expected.get("config", []))


# ---------------------------------------------------------------------------- bricks


def brick_of(kind: str, harness: str, tmp_path: Path) -> BrickFile:
    """A brick of `kind` in the form `harness` takes it, holding the canary."""
    bricks = tmp_path / "bricks"
    bricks.mkdir(exist_ok=True)
    if kind == "context_files":
        path = bricks / "rule.md"
        path.write_text(f"Always run the tests. {CANARY}-context\n")
    elif kind == "skills":
        path = bricks / "zq-skill"
        path.mkdir()
        (path / "SKILL.md").write_text(
            f"---\nname: zq-skill\ndescription: Use when asked.\n---\n{CANARY}-skill\n"
        )
    elif kind == "agents" and harness == "codex":  # a Codex role file
        path = bricks / "reviewer.toml"
        path.write_text(f'description = "Reviews."\ndeveloper_instructions = "{CANARY}-agent"\n')
    elif kind == "agents":
        path = bricks / "reviewer.md"
        path.write_text(f"---\nname: reviewer\ndescription: Reviews.\n---\n{CANARY}-agent\n")
    elif harness == "gemini":  # an extension folder
        path = bricks / "guard"
        path.mkdir()
        (path / "gemini-extension.json").write_text(json.dumps({"name": "guard", "v": CANARY}))
    elif harness == "claude-code":  # an MCP config
        path = bricks / "mcp.json"
        path.write_text(json.dumps({"mcpServers": {"zq": {"command": CANARY}}}))
    else:
        path = bricks / "probe.ts"
        path.write_text(f'registerTool({{ name: "{CANARY}" }})\n')
    return BrickFile(kind, f"bricks/{path.name}", path, "0" * 64)


@pytest.mark.parametrize("kind", ["context_files", "skills", "agents", "extensions"])
def test_each_brick_is_delivered_by_explicit_path_and_says_how(adapter, tmp_path, kind):
    brick = brick_of(kind, adapter.name, tmp_path)
    spec = run_spec(tmp_path, bricks=[brick])
    if kind in adapter.refused_bricks:
        with pytest.raises(AgentabError, match=kind):
            adapter.prepare(spec, installation(adapter, tmp_path))
        return
    invocation = adapter.prepare(spec, installation(adapter, tmp_path))
    assert invocation.passed_as[brick.rel]  # the run records how the brick was passed
    passed = everything_passed(invocation)
    # Its text reached what the harness reads, or its path its command line or config.
    assert f"{CANARY}-" in passed or str(brick.path.absolute()) in passed


@pytest.mark.parametrize("kind", ["context_files", "skills", "agents"])
def test_a_brick_that_is_not_text_is_refused_naming_the_file(adapter, tmp_path, kind):
    brick = brick_of(kind, adapter.name, tmp_path)
    if kind in adapter.refused_bricks:
        pytest.skip(f"{adapter.name} takes no {kind}")
    binary = brick.path / "logo.png" if brick.path.is_dir() else brick.path
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    try:
        invocation = adapter.prepare(run_spec(tmp_path, [brick]), installation(adapter, tmp_path))
    except AgentabError as refused:
        assert binary.name in str(refused)
        return
    # Not refused: then the harness is handed the brick's path, and reads it itself; nothing
    # agentab wrote for it is a mangled copy.
    assert str(brick.path.absolute()) in everything_passed(invocation)
    assert not any("\x00" in text or "\ufffd" in text for text in invocation.files.values())


# ---------------------------------------------------------------------------- thinking


def test_thinking_reaches_the_command_and_off_sends_none(adapter, tmp_path):
    prepared = {}
    for level in ("off", "high"):
        spec = run_spec(tmp_path / level, thinking=level)
        prepared[level] = everything_passed(adapter.prepare(spec, installation(adapter, tmp_path)))
    off, high = (text.replace(str(tmp_path / level), "") for level, text in prepared.items())
    assert off != high  # the level changes what the harness is told
    assert adapter.sent_thinking("off", "demo") is None
    assert adapter.sent_thinking("high", "demo") is not None


def test_every_level_the_harness_declares_is_prepared_or_refused_for_the_model(adapter, tmp_path):
    # A scenario is checked against `thinking_levels` when it loads; a level the model's family
    # cannot take is refused by `prepare`, naming the key, never sent as a neighbour.
    for level in adapter.thinking_levels:
        spec = run_spec(tmp_path / level, thinking=level)
        try:
            adapter.prepare(spec, installation(adapter, tmp_path))
        except AgentabError as refused:
            assert "agent.thinking" in str(refused)


# ---------------------------------------------------------------------------- outcomes


def test_a_timeout_is_a_failed_run_whatever_the_stream_says(adapter, tmp_path):
    empty = tmp_path / "stream.jsonl"
    empty.write_text("")
    for facts in (adapter.read_stream(empty), StreamFacts(stop_reason=ERROR_END[adapter.name])):
        for exit_code in (None, -9, 0):
            outcome = adapter.classify(facts, exit_code, True)
            assert outcome.as_dict() == {"status": "failed", "reason": "timeout"}


@pytest.mark.parametrize(
    "status, message",
    [
        (429, "429 rate limited"),
        (503, "503 Service Unavailable"),
        (529, "529 overloaded"),
        (None, "fetch failed: connect ECONNREFUSED 127.0.0.1:9"),
    ],
)
def test_a_transient_provider_error_is_a_fault_redone(adapter, status, message):
    facts = StreamFacts(stop_reason=ERROR_END[adapter.name], errors=[message], error_status=status)
    with pytest.raises(HarnessFault):
        adapter.classify(facts, 1, False)


def test_a_request_the_provider_refused_is_the_runs_outcome(adapter):
    facts = adapter.read_stream(FIXTURES / REFUSED_STREAM[adapter.name])
    outcome = adapter.classify(facts, 1, False)
    assert outcome.status == "failed" and outcome.reason.startswith("agent-error")


def test_a_harness_that_ends_without_a_word_is_a_fault(adapter, tmp_path):
    empty = tmp_path / "stream.jsonl"
    empty.write_text("")
    with pytest.raises(HarnessFault):
        adapter.classify(adapter.read_stream(empty), 1, False)


def test_a_stream_line_that_is_not_a_json_object_is_noted_not_a_crash(adapter, tmp_path):
    stream = tmp_path / "stream.jsonl"
    stream.write_text('1\n[2]\n"three"\nnot json\n{}\n')
    facts = adapter.read_stream(stream)
    assert isinstance(facts, StreamFacts)
    assert isinstance(adapter.transcript(stream, run_spec(tmp_path)), list)


# ---------------------------------------------------------------------------- installing


class LocalFile(Installer):
    """A harness that is one file already on the machine: no npm, no Node.js."""

    def __init__(self, file: Path) -> None:
        self.file = file

    def install(self, harness, version, harnesses_dir):
        root = harnesses_dir / harness.name / version
        root.mkdir(parents=True, exist_ok=True)
        (root / "installed.json").write_text("{}")
        return self.installation(harness, version, harnesses_dir)

    def installation(self, harness, version, harnesses_dir):
        root = harnesses_dir / harness.name / version
        if not (root / "installed.json").is_file():
            raise AgentabError(f"scenario: agent.version: {version} is not installed")
        return Installation(harness.name, version, root, self.file)

    def command(self, installation):
        return [str(installation.entry)]

    def version_env(self, installation):
        return {"PATH": "/usr/bin:/bin"}


def test_every_adapter_declares_how_it_is_installed_apart_from_how_it_runs():
    for name in HARNESSES:
        assert isinstance(get_harness(name).installer, Installer)


def test_a_harness_that_is_no_npm_package_installs_and_runs_through_its_own_installer(tmp_path):
    binary = tmp_path / "bin" / "pi-native"

    class NativePi(PiHarness):
        installer = LocalFile(binary)

    harness = NativePi()
    with pytest.raises(AgentabError, match="agent.version"):
        harness.installation("2.0.0", tmp_path / "harnesses")
    installed = harness.install("2.0.0", tmp_path / "harnesses")
    assert installed == harness.installation("2.0.0", tmp_path / "harnesses")
    invocation = harness.prepare(run_spec(tmp_path), installed)
    assert invocation.argv[0] == str(binary) and "--mode" in invocation.argv
