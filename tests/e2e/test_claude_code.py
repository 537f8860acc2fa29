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
    check_trajectory,
    definition,
    make_etalon,
    new_world,
    processes_in,
    requests_of,
    run_step,
    run_unconfined,
    setup_axis,
    write,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

AGENT = "---\nname: reviewer\ndescription: AGENT-BRICK-MARK reviews a change.\n---\nYou review.\n"
SKILL = (
    "---\nname: brick-skill\ndescription: SKILL-BRICK-MARK use when fixing arithmetic.\n---\nx\n"
)
PLUGIN_SKILL = "---\nname: plugin-skill\ndescription: PLUGIN-BRICK-MARK a plugin's skill.\n---\nx\n"
# One canary per file, setting or variable: a canary shared by two traps would hide one nobody
# reads.
TRAPS = {
    "ancestor CLAUDE.md": "CANARY-ANCESTOR-CLAUDE-MD",
    "nearer ancestor CLAUDE.md": "CANARY-NEARER-CLAUDE-MD",
    "ancestor CLAUDE.local.md": "CANARY-ANCESTOR-CLAUDE-LOCAL",
    "nearer ancestor CLAUDE.local.md": "CANARY-NEARER-CLAUDE-LOCAL",
    "ancestor AGENTS.md": "CANARY-ANCESTOR-AGENTS",
    "nearer ancestor AGENTS.md": "CANARY-NEARER-AGENTS",
    "ancestor .claude/settings.json": "CANARY-ANCESTOR-SETTINGS",
    "nearer ancestor .claude/settings.json": "CANARY-NEARER-SETTINGS",
    "etalon CLAUDE.md": "CANARY-ETALON-CLAUDE-MD",
    "etalon CLAUDE.local.md": "CANARY-ETALON-CLAUDE-LOCAL",
    "etalon .claude/settings.json env": "CANARY-ETALON-SETTINGS-ENV",
    "etalon .claude/settings.json hook": "CANARY-ETALON-SETTINGS-HOOK",
    "etalon .claude/settings.local.json": "CANARY-ETALON-SETTINGS-LOCAL",
    "etalon .claude/agents": "CANARY-ETALON-AGENT",
    "etalon .claude/skills": "CANARY-ETALON-SKILL",
    "etalon .claude/commands": "CANARY-ETALON-COMMAND",
    "etalon .mcp.json": "CANARY-ETALON-MCP",
    "caller HOME ~/.claude/CLAUDE.md": "CANARY-HOME-CLAUDE-MD",
    "caller HOME ~/.claude/settings.json": "CANARY-HOME-SETTINGS",
    "caller HOME ~/.claude/skills": "CANARY-HOME-SKILL",
    "caller HOME ~/.claude/agents": "CANARY-HOME-AGENT",
    "caller HOME ~/.claude.json": "CANARY-HOME-CLAUDE-JSON",
    "caller CLAUDE_CONFIG_DIR .claude.json": "CANARY-CONFIG-DIR-CLAUDE-JSON",
    "caller environment": "CANARY-CALLER-ENV",
    "caller provider key": "CANARY-CALLER-ANTHROPIC-KEY",
    "caller custom headers": "CANARY-CALLER-HEADERS",
}
# Traps a user's Claude Code does not read in this world, with the reason observed: checked to stay
# unread.
NOT_READ_NATIVELY = {
    "ancestor AGENTS.md": "Claude Code reads CLAUDE.md and CLAUDE.local.md, not AGENTS.md",
    "nearer ancestor AGENTS.md": "Claude Code reads CLAUDE.md and CLAUDE.local.md, not AGENTS.md",
    "ancestor .claude/settings.json": "project settings are the cwd's .claude/, no ancestor's",
    "nearer ancestor .claude/settings.json": "project settings are the cwd's .claude/, no ancestor's",
    "caller HOME ~/.claude.json": "with CLAUDE_CONFIG_DIR set, <that dir>/.claude.json is read",
}
# What keeps Claude Code off the network in the control; its discovery stays on.
NETWORK_OFF = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
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
    hook = {"type": "command", "command": f"echo {TRAPS['etalon .claude/settings.json hook']}"}
    settings = {
        "env": {"ETALON_CANARY": TRAPS["etalon .claude/settings.json env"]},
        "hooks": {"SessionStart": [{"hooks": [hook]}]},
        "model": "claude-opus-4-7",
    }
    write(folder / ".claude" / "settings.json", json.dumps(settings))
    local = {"env": {"LOCAL": TRAPS["etalon .claude/settings.local.json"]}}
    write(folder / ".claude" / "settings.local.json", json.dumps(local))
    agent = trapped_definition("etalon-agent", TRAPS["etalon .claude/agents"])
    write(folder / ".claude" / "agents" / "etalon-agent.md", agent)
    skill = trapped_definition("etalon-skill", TRAPS["etalon .claude/skills"])
    write(folder / ".claude" / "skills" / "etalon-skill" / "SKILL.md", skill)
    command = f"---\ndescription: {TRAPS['etalon .claude/commands']}\n---\nx\n"
    write(folder / ".claude" / "commands" / "etalon-command.md", command)
    server = {"command": "echo", "args": [TRAPS["etalon .mcp.json"]]}
    write(folder / ".mcp.json", json.dumps({"mcpServers": {TRAPS["etalon .mcp.json"]: server}}))


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
    return trapped_world(tmp_path)


def trapped_world(tmp_path: Path) -> dict:
    """CLAUDE.md files above everything, a caller HOME full of Claude Code config, an etalon."""
    world = new_world(tmp_path)
    root, home = world["root"], world["home"]
    for folder, which in ((tmp_path, "ancestor"), (root, "nearer ancestor")):
        write(folder / "CLAUDE.md", f"{TRAPS[f'{which} CLAUDE.md']}\n")
        write(folder / "CLAUDE.local.md", f"{TRAPS[f'{which} CLAUDE.local.md']}\n")
        write(folder / "AGENTS.md", f"{TRAPS[f'{which} AGENTS.md']}\n")
        env = {"env": {"ANCESTOR": TRAPS[f"{which} .claude/settings.json"]}}
        write(folder / ".claude" / "settings.json", json.dumps(env))
    config = home / ".claude"
    write(config / "CLAUDE.md", f"{TRAPS['caller HOME ~/.claude/CLAUDE.md']}\n")
    env = {"env": {"HOME_CANARY": TRAPS["caller HOME ~/.claude/settings.json"]}}
    write(config / "settings.json", json.dumps(env))
    skill = trapped_definition("home-skill", TRAPS["caller HOME ~/.claude/skills"])
    write(config / "skills" / "home-skill" / "SKILL.md", skill)
    agent = trapped_definition("home-agent", TRAPS["caller HOME ~/.claude/agents"])
    write(config / "agents" / "home-agent.md", agent)
    # A user's MCP server, named by its canary: the stream's init event lists it.
    for file, trap in (
        (home, "caller HOME ~/.claude.json"),
        (config, "caller CLAUDE_CONFIG_DIR .claude.json"),
    ):
        server = {"command": "echo", "args": [TRAPS[trap]]}
        write(file / ".claude.json", json.dumps({"mcpServers": {TRAPS[trap]: server}}))
    world["env"] = {
        "AGENTAB_CANARY": TRAPS["caller environment"],
        "ANTHROPIC_API_KEY": TRAPS["caller provider key"],
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",  # the caller's endpoint must not be used
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_CUSTOM_HEADERS": f"x-canary: {TRAPS['caller custom headers']}",
    }
    make_etalon(root / "etalon", claude_project_config)
    return world


@pytest.fixture(scope="module")
def unconfined(tmp_path_factory, claude_installation):
    """Claude Code run as a user runs it, in the trapped world: one run, shared by every
    control."""
    world = trapped_world(tmp_path_factory.mktemp("unconfined"))

    def start(base_url: str) -> tuple[list[str], dict]:
        argv = [*get_harness("claude-code").command(claude_installation), "-p"]
        argv += ["--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
        argv += ["--model", "probe", "--", "Fix mean in calc.py."]
        # The user's own model, and no traffic but the model's; as root, bypass mode needs
        # IS_SANDBOX.
        endpoint = {"ANTHROPIC_BASE_URL": base_url, "IS_SANDBOX": "1", **NETWORK_OFF}
        return argv, endpoint

    return run_unconfined(world, "probe", start, "claude-code")


def system_text(body: dict) -> str:
    blocks = body["system"] if isinstance(body["system"], list) else [{"text": body["system"]}]
    system_messages = [m for m in body["messages"] if m["role"] == "system"]
    return "\n".join(b["text"] for b in blocks) + json.dumps(system_messages)


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_reaches_claude_code_run_without_agentab(unconfined, trap):
    """The positive control: a trap Claude Code never reads would let the test below pass
    whatever agentab does."""
    if trap in NOT_READ_NATIVELY:
        assert not unconfined.saw(TRAPS[trap]), f"Claude Code reads {trap} now: make it a control"
    else:
        assert unconfined.saw(TRAPS[trap]), (
            f"Claude Code {CLAUDE_CODE_VERSION} does not read {trap}"
        )


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
    check_trajectory(out, "claude-code")


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
