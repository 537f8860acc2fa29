"""One real Gemini CLI 0.61.0 run per test, through `python -m agentab.steps.run`, against the
offline model speaking the Gemini API.

Each test builds an etalon and a scenario in tmp_path and runs the step in a child process whose
HOME and environment carry traps (a caller's `~/.gemini`, Gemini CLI's own variables, ancestor
GEMINI.md files, an etalon `.gemini/` with settings, commands, extensions, agents, and a `.env`);
`model-requests.jsonl` (the offline model's log) says what reached the model, the stream what
reached the tools.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from agentab.harnesses import get_harness
from tests.e2e.harness_world import (
    GEMINI_VERSION,
    HARNESSES_DIR,
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

TRAPS = {
    "ancestor GEMINI.md": "CANARY-ANCESTOR-GEMINI-MD",
    "caller HOME ~/.gemini": "CANARY-CALLER-HOME-GEMINI",
    "etalon .gemini/settings.json": "CANARY-ETALON-SETTINGS",
    "etalon .gemini/commands": "CANARY-ETALON-COMMAND",
    "etalon .gemini/extensions": "CANARY-ETALON-EXTENSION",
    "etalon .gemini/agents": "CANARY-ETALON-AGENT",
    "etalon .gemini/policies": "CANARY-ETALON-POLICY",
    "etalon .env": "CANARY-ETALON-DOTENV",
    "caller environment": "CANARY-CALLER-ENV",
}
SCENARIO = Scenario(
    name="e2e-gemini",
    question="Does Gemini CLI see exactly its bricks?",
    harness="gemini",
    version=GEMINI_VERSION,
)
FULL = setup_axis(
    "full",
    context_files=["bricks/run-tests.md"],
    extensions=["bricks/guard"],
    agents=["bricks/reviewer.md"],
)
SKILL = setup_axis("skill", skills=["bricks/skill"])


def git(*args, cwd):
    """For a test that commits into the etalon after the world has made it."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def extension_files(folder: Path, name: str, mark: str) -> None:
    manifest = {"name": name, "version": "1.0.0", "contextFileName": "EXTENSION.md"}
    write(folder / "gemini-extension.json", json.dumps(manifest))
    write(folder / "EXTENSION.md", f"{mark}\n")


def agent_text(name: str, mark: str) -> str:
    return definition(name, f"{mark} reviews a diff", "Review the diff.")


def gemini_project_config(folder: Path) -> None:
    """Project configuration Gemini CLI must not read."""
    dot = folder / ".gemini"
    settings = {
        "model": {"name": TRAPS["etalon .gemini/settings.json"]},
        "context": {"fileName": "SETTINGS-CONTEXT.md"},
        "general": {"defaultApprovalMode": "plan"},
        "tools": {"exclude": ["run_shell_command"]},
    }
    write(dot / "settings.json", json.dumps(settings))
    write(folder / "SETTINGS-CONTEXT.md", f"{TRAPS['etalon .gemini/settings.json']}\n")
    command = f'description = "x"\nprompt = "{TRAPS["etalon .gemini/commands"]}"\n'
    write(dot / "commands" / "canary.toml", command)
    extension_files(
        dot / "extensions" / "etalon-ext", "etalon-ext", TRAPS["etalon .gemini/extensions"]
    )
    write(
        dot / "agents" / "etalon-agent.md",
        agent_text("etalon_agent", TRAPS["etalon .gemini/agents"]),
    )
    # A workspace policy that would take the shell away (the tests check it is offered).
    deny = '[[rule]]\ntoolName = "run_shell_command"\ndecision = "deny"\npriority = 900\n'
    deny += f'denyMessage = "{TRAPS["etalon .gemini/policies"]}"\n'
    write(dot / "policies" / "deny-shell.toml", deny)
    write(
        folder / ".env", f"AGENTAB_DOTENV={TRAPS['etalon .env']}\nGEMINI_SYSTEM_MD=/nonexistent\n"
    )


def make_scenario(root: Path, model: str, thinking="off", timeout="60s", deltas="") -> Path:
    write(root / "bricks" / "run-tests.md", f"CONTEXT-BRICK-MARK {RULE}\n")
    extension_files(root / "bricks" / "guard", "guard", "EXTENSION-BRICK-MARK")
    write(root / "bricks" / "reviewer.md", agent_text("brick_reviewer", "AGENT-BRICK-MARK"))
    write(root / "bricks" / "skill" / "SKILL.md", definition("s", "d"))
    return SCENARIO.write_in(root, model, thinking, timeout, deltas)


@pytest.fixture
def world(tmp_path, gemini_installation):
    """Ancestor GEMINI.md files, a caller HOME full of Gemini CLI config, an etalon."""
    world = new_world(tmp_path)
    root, home = world["root"], world["home"]
    write(tmp_path / "GEMINI.md", f"{TRAPS['ancestor GEMINI.md']}\n")
    write(root / "GEMINI.md", f"{TRAPS['ancestor GEMINI.md']} (nearer)\n")
    mark = TRAPS["caller HOME ~/.gemini"]
    write(home / ".gemini" / "GEMINI.md", f"{mark}\n")
    write(home / ".gemini" / "settings.json", json.dumps({"model": {"name": mark}}))
    write(home / ".gemini" / ".env", f"AGENTAB_HOME_DOTENV={mark}\n")
    extension_files(home / ".gemini" / "extensions" / "home-ext", "home-ext", mark)
    write(home / ".gemini" / "agents" / "home-agent.md", agent_text("home_agent", mark))
    canary = TRAPS["caller environment"]
    world["env"] = {
        "AGENTAB_CANARY": canary,
        "GEMINI_CLI_HOME": str(home),
        "GEMINI_API_KEY": canary,
        "GEMINI_MODEL": canary,
        "GEMINI_SYSTEM_MD": str(write(home / "system.md", f"{canary}\n")),
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",
        "GEMINI_CLI_TRUST_WORKSPACE": "false",
    }
    make_etalon(root / "etalon", gemini_project_config)
    return world


def offered_tools(request: dict) -> set[str]:
    return {f["name"] for t in request["body"]["tools"] for f in t["functionDeclarations"]}


def system_of(request: dict) -> str:
    return "\n".join(p.get("text", "") for p in request["body"]["systemInstruction"]["parts"])


def test_declared_bricks_reach_the_model_and_nothing_else_does(world):
    scenario = make_scenario(world["root"], "probe", deltas=FULL)
    done, out = run_step(world, scenario, "full")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["outcome"] == {"status": "completed", "reason": None}
    first = requests_of(out)[0]
    assert first["path"] == "/v1beta/models/probe:streamGenerateContent?alt=sse"
    system = system_of(first)
    assert "CONTEXT-BRICK-MARK" in system  # context file: appended to the system instruction
    assert "AGENT-BRICK-MARK" in system  # agent definition: listed as a subagent
    first_message = json.dumps(first["body"]["contents"][0])
    assert "EXTENSION-BRICK-MARK" in first_message  # extension: its context, by -e guard
    # The write and shell tools are offered (the default headless mode would drop them).
    assert offered_tools(first) >= {"read_file", "replace", "write_file", "run_shell_command"}
    seen_by_model = (out / "model-requests.jsonl").read_text()
    assert "GEMINI_CLI_HOME=" in seen_by_model  # the shell tool ran and dumped its environment
    stream = (out / "stream.jsonl").read_text()
    for trap, canary in TRAPS.items():
        assert canary not in seen_by_model, f"{trap} reached the model"
        assert canary not in stream, f"{trap} reached the agent or its tools"
    assert "AGENTAB_CANARY" not in record["env"] and "GEMINI_SYSTEM_MD" not in record["env"]
    assert record["env"]["GEMINI_API_KEY"] == "<secret>"
    assert [b["passed_as"].split()[0] for b in record["bricks"]] == ["global", "copied", "copied"]
    assert ".gemini" not in (out / "result.patch").read_text()


def test_without_bricks_the_baseline_sees_none_of_them(world):
    scenario = make_scenario(world["root"], "probe", deltas=FULL)
    done, out = run_step(world, scenario, "bare")
    assert done.returncode == 0, done.stderr
    seen = (out / "model-requests.jsonl").read_text()
    for mark in ("CONTEXT-BRICK-MARK", "EXTENSION-BRICK-MARK", "AGENT-BRICK-MARK"):
        assert mark not in seen
    assert offered_tools(requests_of(out)[0]) >= {"replace", "write_file", "run_shell_command"}


@pytest.mark.parametrize("name", ["GEMINI.md", "pkg/GEMINI.md"])
def test_an_etalon_gemini_md_is_refused_before_anything_runs(world, name):
    etalon = world["root"] / "etalon"
    write(etalon / name, "CANARY-ETALON-GEMINI-MD\n")
    git("add", "-A", cwd=etalon)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "md", cwd=etalon)
    git("tag", "-f", "v1.0", cwd=etalon)
    scenario = make_scenario(world["root"], "demo")
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 2, done.stderr
    assert "GEMINI.md" in done.stderr and "Traceback" not in done.stderr
    assert not (out / "run.json").exists()
    requests = out / "model-requests.jsonl"
    assert not requests.exists() or requests.read_text() == ""


def test_a_skill_brick_is_refused_naming_the_kind(world):
    scenario = make_scenario(world["root"], "demo", deltas=SKILL)
    done, out = run_step(world, scenario, "skill")
    assert done.returncode == 2
    assert "skills" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("thinking, sent", [("high", "budget:16384"), ("off", None)])
def test_the_thinking_level_reaches_the_model(world, thinking, sent):
    from agentab.offline_model.wire.gemini import conversation

    scenario = make_scenario(world["root"], "demo", thinking=thinking)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    requests = requests_of(out)
    assert {conversation(r["body"], r["path"]).thinking for r in requests} == {sent}
    assert get_harness("gemini").sent_thinking(thinking, "demo") == sent


def test_demo_run_fixes_the_bug_through_the_real_tools(world):
    scenario = make_scenario(world["root"], "demo")
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["outcome"]["status"] == "completed"
    assert record["facts"]["tool_calls"]["read_file"] == 1
    assert record["facts"]["tool_calls"]["replace"] == 1
    assert record["facts"]["cost_usd"] is None and record["facts"]["tokens"]["input"] > 0
    assert record["facts"]["turns"] == len(requests_of(out))
    assert "calc.py" in (out / "result.patch").read_text()
    transcript = [json.loads(line) for line in (out / "transcript.jsonl").read_text().splitlines()]
    assert transcript[0]["role"] == "user" and transcript[-1]["role"] == "assistant"


def test_a_hung_agent_is_killed_at_the_timeout(world):
    scenario = make_scenario(world["root"], "hang", timeout="5s")
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["outcome"] == {"status": "failed", "reason": "timeout"}
    assert 5 <= record["duration_s"] < 20
    assert len(requests_of(out)) == 1  # the request reached the model, which never answered
    assert processes_in(world["root"] / "work") == []
    assert not (out / "agent.lock").exists()


def test_a_provider_error_makes_the_run_failed_not_retried(world):
    scenario = make_scenario(world["root"], "provider-error")
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["outcome"]["status"] == "failed"
    assert record["outcome"]["reason"].startswith("agent-error:")
    assert record["exit_code"] == 400 % 256  # Gemini CLI exits with the HTTP status mod 256
    assert record["facts"]["error_status"] == 400
    assert len(requests_of(out)) == 1  # maxAttempts 1: no retry
    assert record["duration_s"] < 30


def test_a_transient_provider_error_is_a_fault(world):
    scenario = make_scenario(world["root"], "flaky")
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 3, done.stderr  # redone by the workflow
    assert "529" in done.stderr
    assert not (out / "run.json").exists()


def test_install_is_idempotent(gemini_installation):
    marker = gemini_installation.root / "installed.json"
    before = marker.stat().st_mtime_ns
    again = get_harness("gemini").install(GEMINI_VERSION, HARNESSES_DIR)
    assert again.entry == gemini_installation.entry
    assert marker.stat().st_mtime_ns == before
    assert os.access(again.entry, os.R_OK)
