"""One real Claude Code run per test, through `python -m agentab.steps.run`, against the offline
model.

Each test builds an etalon repository full of Claude Code project configuration and a scenario
in tmp_path, runs the step in a child process whose HOME and environment carry traps, and reads
what reached the model from `model-requests.jsonl` (the offline model's log) and what reached the
tools from the stream.
"""

import json
from pathlib import Path

import pytest

from agentab.harnesses import get_harness
from agentab.offline_model.wire.anthropic_messages import anthropic_thinking
from tests.e2e.harness_world import (
    CLAUDE_CODE_VERSION,
    RULE,
    Scenario,
    definition,
    make_etalon,
    new_world,
    processes_in,
    requests_of,
    run_step,
    setup_axis,
    write,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

AGENT = "---\nname: reviewer\ndescription: AGENT-BRICK-MARK reviews a change.\n---\nYou review.\n"
SKILL = (
    "---\nname: brick-skill\ndescription: SKILL-BRICK-MARK use when fixing arithmetic.\n---\nx\n"
)
PLUGIN_SKILL = "---\nname: plugin-skill\ndescription: PLUGIN-BRICK-MARK a plugin's skill.\n---\nx\n"
TRAPS = {
    "ancestor CLAUDE.md": "CANARY-ANCESTOR-CLAUDE-MD",
    "ancestor CLAUDE.local.md": "CANARY-ANCESTOR-CLAUDE-LOCAL",
    "ancestor AGENTS.md": "CANARY-ANCESTOR-AGENTS",
    "etalon CLAUDE.md": "CANARY-ETALON-CLAUDE-MD",
    "etalon CLAUDE.local.md": "CANARY-ETALON-CLAUDE-LOCAL",
    "etalon .claude/settings.json": "CANARY-ETALON-SETTINGS",
    "etalon .claude/agents": "CANARY-ETALON-AGENT",
    "etalon .claude/skills": "CANARY-ETALON-SKILL",
    "etalon .claude/commands": "CANARY-ETALON-COMMAND",
    "etalon .mcp.json": "CANARY-ETALON-MCP",
    "caller HOME ~/.claude": "CANARY-HOME-CLAUDE",
    "caller environment": "CANARY-CALLER-ENV",
}
SCENARIO = Scenario(
    name="e2e-claude-code",
    question="Does Claude Code see exactly its bricks?",
    harness="claude-code",
    version=CLAUDE_CODE_VERSION,
)
FULL = setup_axis(
    "full",
    context_files=["bricks/run-tests.md"],
    agents=["bricks/reviewer.md"],
    skills=["bricks/brick-skill"],
    extensions=["bricks/probe-plugin"],
)


def trapped_definition(name: str, canary: str) -> str:
    # The body too: an agent or skill Claude Code invokes is read whole, not just listed.
    return definition(name, canary, body=canary)


def claude_project_config(folder: Path) -> None:
    """Claude Code project config the run must not discover."""
    write(folder / "CLAUDE.md", f"{TRAPS['etalon CLAUDE.md']}\n")
    write(folder / "CLAUDE.local.md", f"{TRAPS['etalon CLAUDE.local.md']}\n")
    canary = TRAPS["etalon .claude/settings.json"]
    hook = {"type": "command", "command": f"echo {canary}"}
    settings = {
        "env": {"ETALON_CANARY": canary},
        "hooks": {"SessionStart": [{"hooks": [hook]}]},
        "model": "claude-opus-4-7",
    }
    write(folder / ".claude" / "settings.json", json.dumps(settings))
    write(folder / ".claude" / "settings.local.json", json.dumps({"env": {"LOCAL": canary}}))
    agent = trapped_definition("etalon-agent", TRAPS["etalon .claude/agents"])
    write(folder / ".claude" / "agents" / "etalon-agent.md", agent)
    skill = trapped_definition("etalon-skill", TRAPS["etalon .claude/skills"])
    write(folder / ".claude" / "skills" / "etalon-skill" / "SKILL.md", skill)
    command = f"---\ndescription: {TRAPS['etalon .claude/commands']}\n---\nx\n"
    write(folder / ".claude" / "commands" / "etalon-command.md", command)
    server = {"command": "echo", "args": [TRAPS["etalon .mcp.json"]]}
    write(folder / ".mcp.json", json.dumps({"mcpServers": {"etalon": server}}))


def make_scenario(root: Path, model: str, thinking="off", timeout="60s", bricks=True) -> Path:
    write(root / "bricks" / "run-tests.md", f"CONTEXT-BRICK-MARK {RULE}\n")
    write(root / "bricks" / "reviewer.md", AGENT)
    write(root / "bricks" / "brick-skill" / "SKILL.md", SKILL)
    plugin = root / "bricks" / "probe-plugin"
    write(plugin / ".claude-plugin" / "plugin.json", json.dumps({"name": "probe-plugin"}))
    write(plugin / "skills" / "plugin-skill" / "SKILL.md", PLUGIN_SKILL)
    return SCENARIO.write_in(root, model, thinking, timeout, FULL if bricks else "")


@pytest.fixture
def world(tmp_path, claude_installation):
    """CLAUDE.md files above everything, a caller HOME full of Claude Code config, an etalon."""
    world = new_world(tmp_path)
    root, home = world["root"], world["home"]
    for folder in (tmp_path, root):
        write(folder / "CLAUDE.md", f"{TRAPS['ancestor CLAUDE.md']}\n")
        write(folder / "CLAUDE.local.md", f"{TRAPS['ancestor CLAUDE.local.md']}\n")
        write(folder / "AGENTS.md", f"{TRAPS['ancestor AGENTS.md']}\n")
        env = {"env": {"ANCESTOR": TRAPS["ancestor CLAUDE.md"]}}
        write(folder / ".claude" / "settings.json", json.dumps(env))
    canary = TRAPS["caller HOME ~/.claude"]
    write(home / ".claude" / "CLAUDE.md", f"{canary}\n")
    write(home / ".claude" / "settings.json", json.dumps({"env": {"HOME_CANARY": canary}}))
    skill = trapped_definition("home-skill", canary)
    write(home / ".claude" / "skills" / "home-skill" / "SKILL.md", skill)
    write(home / ".claude" / "agents" / "home-agent.md", trapped_definition("home-agent", canary))
    write(home / ".claude.json", json.dumps({"mcpServers": {"home": {"command": canary}}}))
    canary = TRAPS["caller environment"]
    world["env"] = {
        "AGENTAB_CANARY": canary,
        "ANTHROPIC_API_KEY": canary,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",  # the caller's endpoint must not be used
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_CUSTOM_HEADERS": f"x-canary: {canary}",
    }
    make_etalon(root / "etalon", claude_project_config)
    return world


def system_text(body: dict) -> str:
    blocks = body["system"] if isinstance(body["system"], list) else [{"text": body["system"]}]
    system_messages = [m for m in body["messages"] if m["role"] == "system"]
    return "\n".join(b["text"] for b in blocks) + json.dumps(system_messages)


def test_declared_bricks_reach_the_model_and_nothing_else_does(world):
    scenario = make_scenario(world["root"], "probe")
    done, out = run_step(world, scenario, "full")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["outcome"] == {"status": "completed", "reason": None}
    requests = requests_of(out)
    system = system_text(requests[0]["body"])
    assert "CONTEXT-BRICK-MARK" in system  # --append-system-prompt-file
    assert "AGENT-BRICK-MARK" in system  # --agents
    assert "SKILL-BRICK-MARK" in system  # our plugin folder, --plugin-dir
    assert "PLUGIN-BRICK-MARK" in system  # the extension: a plugin folder, --plugin-dir
    seen_by_model = (out / "model-requests.jsonl").read_text()
    assert "CLAUDE_CONFIG_DIR=" in seen_by_model  # bash dumped its environment to the model
    stream = (out / "stream.jsonl").read_text()
    for trap, canary in TRAPS.items():
        assert canary not in seen_by_model, f"{trap} reached the model"
        assert canary not in stream, f"{trap} reached the agent or its tools"
    assert {r["body"]["model"] for r in requests} == {"probe"}  # not the etalon settings' model
    assert "AGENTAB_CANARY" not in record["env"] and "ANTHROPIC_CUSTOM_HEADERS" not in record["env"]
    assert record["env"]["ANTHROPIC_API_KEY"] == "<secret>"
    passed_as = {b["kind"]: b["passed_as"].split()[0] for b in record["bricks"]}
    assert passed_as == {
        "context_files": "--append-system-prompt-file",
        "agents": "--agents",
        "skills": "--plugin-dir",
        "extensions": "--plugin-dir",
    }
    patch = (out / "result.patch").read_text()
    assert ".claude" not in patch and "agents.json" not in patch


def test_without_bricks_the_baseline_sees_none_of_them(world):
    scenario = make_scenario(world["root"], "probe")
    done, out = run_step(world, scenario, "bare")
    assert done.returncode == 0, done.stderr
    seen = (out / "model-requests.jsonl").read_text()
    for mark in ("CONTEXT-BRICK-MARK", "AGENT-BRICK-MARK", "SKILL-BRICK-MARK", "PLUGIN-BRICK"):
        assert mark not in seen


@pytest.mark.parametrize("thinking", ["off", "high", "low"])
def test_the_demo_fixes_the_bug_and_the_thinking_level_reaches_the_model(world, thinking):
    scenario = make_scenario(world["root"], "demo", thinking=thinking, bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["outcome"]["status"] == "completed"
    sent = get_harness("claude-code").sent_thinking(thinking, "demo")
    assert {anthropic_thinking(r["body"]) for r in requests_of(out)} == {sent}
    assert record["facts"]["tool_calls"]["Read"] == 1 and record["facts"]["cost_usd"] > 0
    assert "calc.py" in (out / "result.patch").read_text()
    kinds = [
        call["kind"]
        for line in map(json.loads, (out / "transcript.jsonl").read_text().splitlines())
        if line["type"] == "message"
        for call in line["tool_calls"]
    ]
    assert kinds[:2] == ["read", "edit"]


def test_a_hung_agent_is_killed_at_the_timeout(world):
    scenario = make_scenario(world["root"], "hang", timeout="4s", bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["outcome"] == {"status": "failed", "reason": "timeout"}
    assert 4 <= record["duration_s"] < 15
    assert processes_in(world["root"] / "work") == []  # no claude left in the clone
    assert not (out / "agent.lock").exists()


def test_an_invalid_request_makes_the_run_failed(world):
    scenario = make_scenario(world["root"], "provider-error", bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["exit_code"] == 1 and record["facts"]["error_status"] == 400
    assert record["outcome"]["status"] == "failed"
    assert record["outcome"]["reason"].startswith("agent-error:")


def test_a_provider_that_stays_overloaded_is_a_fault(world):
    # Claude Code retries a 529 ten times with backoff (about three minutes) before it gives up.
    scenario = make_scenario(world["root"], "overloaded", timeout="5m", bricks=False)
    done, out = run_step(world, scenario, "baseline", timeout=420)
    assert done.returncode == 3, done.stderr
    assert "529" in done.stderr and "Traceback" not in done.stderr
    assert not (out / "run.json").exists()
    # A fault is no outcome: its attempt's requests are kept apart, the run has none yet.
    kept = out / "earlier-attempts" / "attempt-1-model-requests.jsonl"
    assert len(kept.read_text().splitlines()) == 11
