"""One real Claude Code run per test, through `python -m agentab.steps.run`, against the offline
model.

Each test builds an etalon repository full of Claude Code project configuration and a scenario
in tmp_path, runs the step in a child process whose HOME and environment carry traps, and reads
what reached the model from `model-requests.jsonl` (the offline model's log) and what reached the
tools from the stream.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentab.etalon import fresh_clone
from agentab.harnesses import get_harness
from agentab.offline_model.wire.anthropic_messages import anthropic_thinking

REPO = Path(__file__).resolve().parents[2]
HARNESSES_DIR = REPO / ".agentab" / "harnesses"
VERSION = "2.1.332"

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CALC = "def mean(values):\n    return sum(values) / (len(values) - 1)\n\n\ndef add(a, b):\n    return a + b\n"
TESTS = (
    "import unittest\nfrom calc import add, mean\n\n\nclass T(unittest.TestCase):\n"
    "    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n\n"
    "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n"
)
RULE = (
    "Before you finish, always run the test suite with `python3 -m unittest` and report the result."
)
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


@pytest.fixture(scope="session")
def claude_installation():
    return get_harness("claude-code").install(VERSION, HARNESSES_DIR)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def git(*args, cwd):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def definition(name: str, canary: str) -> str:
    return f"---\nname: {name}\ndescription: {canary}\n---\n{canary}\n"


def make_etalon(folder: Path) -> Path:
    """The demo's calc repository, plus Claude Code project config it must not discover."""
    write(folder / "calc.py", CALC)
    write(folder / "test_calc.py", TESTS)
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
    agent = definition("etalon-agent", TRAPS["etalon .claude/agents"])
    write(folder / ".claude" / "agents" / "etalon-agent.md", agent)
    skill = definition("etalon-skill", TRAPS["etalon .claude/skills"])
    write(folder / ".claude" / "skills" / "etalon-skill" / "SKILL.md", skill)
    command = f"---\ndescription: {TRAPS['etalon .claude/commands']}\n---\nx\n"
    write(folder / ".claude" / "commands" / "etalon-command.md", command)
    server = {"command": "echo", "args": [TRAPS["etalon .mcp.json"]]}
    write(folder / ".mcp.json", json.dumps({"mcpServers": {"etalon": server}}))
    git("init", "-q", cwd=folder)
    git("add", "-A", cwd=folder)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "etalon", cwd=folder)
    git("tag", "v1.0", cwd=folder)
    return folder


def make_scenario(root: Path, model: str, thinking="off", timeout="60s", bricks=True) -> Path:
    write(root / "bricks" / "run-tests.md", f"CONTEXT-BRICK-MARK {RULE}\n")
    write(root / "bricks" / "reviewer.md", AGENT)
    write(root / "bricks" / "brick-skill" / "SKILL.md", SKILL)
    plugin = root / "bricks" / "probe-plugin"
    write(plugin / ".claude-plugin" / "plugin.json", json.dumps({"name": "probe-plugin"}))
    write(plugin / "skills" / "plugin-skill" / "SKILL.md", PLUGIN_SKILL)
    deltas = ""
    if bricks:
        deltas = (
            '[axes]\nsetup = ["bare", "full"]\n\n[deltas.setup.full]\n'
            'context_files = ["bricks/run-tests.md"]\nagents = ["bricks/reviewer.md"]\n'
            'skills = ["bricks/brick-skill"]\nextensions = ["bricks/probe-plugin"]\n'
        )
    text = f"""
[scenario]
name = "e2e-claude-code"
question = "Does Claude Code see exactly its bricks?"

[task]
prompt = "The function `mean` in calc.py returns wrong results. Fix it."

[etalon]
repo = "{root / "etalon"}"
tag = "v1.0"

[agent]
harness = "claude-code"
version = "{VERSION}"
provider = "offline"
model = "{model}"
thinking = "{thinking}"
timeout = "{timeout}"

[protocol]
repetitions = 1

{deltas}
[validation]
metrics = ["tests_pass"]

[validators.tests]
mode = "script"
run = ["check.py"]
"""
    write(root / "check.py", "print('{}')\n")
    return write(root / "scenario.toml", text)


@pytest.fixture
def world(tmp_path, claude_installation):
    """CLAUDE.md files above everything, a caller HOME full of Claude Code config, an etalon."""
    root = tmp_path / "project"
    for folder in (tmp_path, root):
        write(folder / "CLAUDE.md", f"{TRAPS['ancestor CLAUDE.md']}\n")
        write(folder / "CLAUDE.local.md", f"{TRAPS['ancestor CLAUDE.local.md']}\n")
        write(folder / "AGENTS.md", f"{TRAPS['ancestor AGENTS.md']}\n")
        env = {"env": {"ANCESTOR": TRAPS["ancestor CLAUDE.md"]}}
        write(folder / ".claude" / "settings.json", json.dumps(env))
    home = tmp_path / "caller-home"
    canary = TRAPS["caller HOME ~/.claude"]
    write(home / ".claude" / "CLAUDE.md", f"{canary}\n")
    write(home / ".claude" / "settings.json", json.dumps({"env": {"HOME_CANARY": canary}}))
    write(home / ".claude" / "skills" / "home-skill" / "SKILL.md", definition("home-skill", canary))
    write(home / ".claude" / "agents" / "home-agent.md", definition("home-agent", canary))
    write(home / ".claude.json", json.dumps({"mcpServers": {"home": {"command": canary}}}))
    make_etalon(root / "etalon")
    return {"tmp": tmp_path, "root": root, "home": home}


def run_step(
    world, scenario: Path, cell: str, timeout=300
) -> tuple[subprocess.CompletedProcess, Path]:
    out = world["root"] / "results" / cell / "r01"
    clone = world["root"] / "work" / cell / "r01" / "clone"
    if not clone.exists():
        fresh_clone(str(world["root"] / "etalon"), "v1.0", clone, world["root"] / "mirrors")
    canary = TRAPS["caller environment"]
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(world["home"]),
        "PYTHONPATH": str(REPO / "src"),
        "AGENTAB_CANARY": canary,
        "ANTHROPIC_API_KEY": canary,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",  # the caller's endpoint must not be used
        "CLAUDE_CONFIG_DIR": str(world["home"] / ".claude"),
        "ANTHROPIC_CUSTOM_HEADERS": f"x-canary: {canary}",
    }
    argv = [sys.executable, "-m", "agentab.steps.run", "--scenario", str(scenario)]
    argv += ["--cell", cell, "--rep", "1", "--clone", str(clone), "--out", str(out)]
    argv += ["--harnesses-dir", str(HARNESSES_DIR), "--mirrors-dir", str(world["root"] / "mirrors")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    return done, out


def requests_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "model-requests.jsonl").read_text().splitlines()]


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


def processes_in(folder: Path) -> list[int]:
    found = []
    for cwd in Path("/proc").glob("[0-9]*/cwd"):
        try:
            if cwd.resolve().is_relative_to(folder.resolve()):
                found.append(int(cwd.parent.name))
        except OSError:
            continue
    return found


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
