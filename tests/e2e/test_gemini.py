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

# One canary per file, setting or variable: a canary shared by two traps would hide one nobody
# reads.
TRAPS = {
    "ancestor GEMINI.md": "CANARY-ANCESTOR-GEMINI-MD",
    "nearer ancestor GEMINI.md": "CANARY-NEARER-GEMINI-MD",
    "caller ~/.gemini/GEMINI.md": "CANARY-HOME-GEMINI-MD",
    "caller ~/.gemini/settings.json": "CANARY-HOME-SETTINGS",
    "caller ~/.gemini/.env": "CANARY-HOME-DOTENV",
    "caller ~/.gemini/extensions": "CANARY-HOME-EXTENSION",
    "caller ~/.gemini/agents": "CANARY-HOME-AGENT",
    "etalon .gemini/settings.json": "CANARY-ETALON-SETTINGS",
    "etalon .gemini/commands": "CANARY-ETALON-COMMAND",
    "etalon .gemini/extensions": "CANARY-ETALON-EXTENSION",
    "etalon .gemini/agents": "CANARY-ETALON-AGENT",
    "etalon .gemini/policies": "CANARY-ETALON-POLICY",
    "etalon .env": "CANARY-ETALON-DOTENV",
    "caller environment": "CANARY-CALLER-ENV",
    "caller GEMINI_API_KEY": "CANARY-CALLER-API-KEY",
    "caller GEMINI_MODEL": "CANARY-CALLER-MODEL",
    "caller GEMINI_SYSTEM_MD": "CANARY-CALLER-SYSTEM-MD",
}
# Traps a user's Gemini CLI does not read in this world, with the reason observed: checked to
# stay unread. The trusted etalon's settings take the shell away (`tools.exclude`), so what only
# the shell's `env` would show stays unseen here; it reached the tools once they were removed.
NO_SHELL = "seen only through the shell, which the etalon's settings exclude in this world"
ABOVE_CWD = "no GEMINI.md above the cwd reached the model (with or without the etalon's .git)"
NOT_READ_NATIVELY = {
    "ancestor GEMINI.md": ABOVE_CWD,
    "nearer ancestor GEMINI.md": ABOVE_CWD,
    "caller ~/.gemini/settings.json": "GEMINI_MODEL of the caller's environment names the model",
    "caller ~/.gemini/.env": "the project's .env is loaded instead (read once that is gone)",
    "caller ~/.gemini/agents": "no agent definition reached the model (not probed further)",
    "etalon .gemini/commands": "a command reaches the model only when the prompt invokes it",
    "etalon .gemini/extensions": "not loaded from the project (the caller's extension is)",
    "etalon .gemini/agents": "no agent definition reached the model (not probed further)",
    # Observed with the etalon's settings removed: the shell ran, the deny rule did not apply.
    "etalon .gemini/policies": "its deny rule did not stop the shell (yolo; not probed further)",
    "etalon .env": NO_SHELL,
    "caller environment": NO_SHELL,
    "caller GEMINI_API_KEY": f"a header whose value is not logged, else {NO_SHELL}",
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
    return trapped_world(tmp_path)


def trapped_world(tmp_path: Path) -> dict:
    """Ancestor GEMINI.md files, a caller HOME full of Gemini CLI config, an etalon."""
    world = new_world(tmp_path)
    root, home = world["root"], world["home"]
    write(tmp_path / "GEMINI.md", f"{TRAPS['ancestor GEMINI.md']}\n")
    write(root / "GEMINI.md", f"{TRAPS['nearer ancestor GEMINI.md']}\n")
    dot = home / ".gemini"
    write(dot / "GEMINI.md", f"{TRAPS['caller ~/.gemini/GEMINI.md']}\n")
    settings = {"model": {"name": TRAPS["caller ~/.gemini/settings.json"]}}
    write(dot / "settings.json", json.dumps(settings))
    write(dot / ".env", f"AGENTAB_HOME_DOTENV={TRAPS['caller ~/.gemini/.env']}\n")
    mark = TRAPS["caller ~/.gemini/extensions"]
    extension_files(dot / "extensions" / "home-ext", "home-ext", mark)
    write(
        dot / "agents" / "home-agent.md", agent_text("home_agent", TRAPS["caller ~/.gemini/agents"])
    )
    system_md = write(home / "system.md", f"{TRAPS['caller GEMINI_SYSTEM_MD']}\n")
    world["env"] = {
        "AGENTAB_CANARY": TRAPS["caller environment"],
        "GEMINI_CLI_HOME": str(home),
        "GEMINI_API_KEY": TRAPS["caller GEMINI_API_KEY"],
        "GEMINI_MODEL": TRAPS["caller GEMINI_MODEL"],
        "GEMINI_SYSTEM_MD": str(system_md),
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",
        "GEMINI_CLI_TRUST_WORKSPACE": "false",
    }
    make_etalon(root / "etalon", gemini_project_config)
    return world


@pytest.fixture(scope="module")
def unconfined(tmp_path_factory, gemini_installation):
    """Gemini CLI run as a user runs it, in the trapped world: one run, shared by every
    control."""
    world = trapped_world(tmp_path_factory.mktemp("unconfined"))

    def start(base_url: str) -> tuple[list[str], dict]:
        # A user's own model: the API key auth in their settings (0.61 refuses the endpoint
        # without it), the endpoint in their environment; their own repository trusted.
        settings = world["home"] / ".gemini" / "settings.json"
        config = json.loads(settings.read_text())
        config["security"] = {"auth": {"selectedType": "gemini-api-key"}}
        settings.write_text(json.dumps(config))
        argv = [
            *get_harness("gemini").command(gemini_installation),
            "--prompt=Fix mean in calc.py.",
        ]
        argv += ["--output-format", "stream-json", "--approval-mode", "yolo"]
        return argv, {"GOOGLE_GEMINI_BASE_URL": base_url, "GEMINI_CLI_TRUST_WORKSPACE": "true"}

    return run_unconfined(world, "probe", start, "gemini")


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_reaches_gemini_run_without_agentab(unconfined, trap):
    """The positive control: a trap Gemini CLI never reads would let the test below pass
    whatever agentab does."""
    if trap in NOT_READ_NATIVELY:
        assert not unconfined.saw(TRAPS[trap]), f"Gemini CLI reads {trap} now: make it a control"
    else:
        assert unconfined.saw(TRAPS[trap]), f"Gemini CLI {GEMINI_VERSION} does not read {trap}"


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
    check_trajectory(out, "gemini")


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
