"""One real pi run per test, through `python -m agentab.steps.run`, against the offline model.

Each test builds an etalon repository and a scenario in tmp_path, runs the step in a child
process whose HOME and environment carry traps, and reads what reached the model from
`model-requests.jsonl` (the offline model's log) and what reached the tools from the stream.
"""

import json
import os
from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.harnesses import get_harness
from agentab.harnesses.base import RunSpec
from agentab.harnesses.pi import offline_models_json
from tests.e2e.harness_world import (
    HARNESSES_DIR,
    PI_VERSION,
    RULE,
    Scenario,
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

EXTENSION = """
import { Type } from "@earendil-works/pi-ai";
import { defineTool } from "@earendil-works/pi-coding-agent";

export default function (pi) {
  pi.registerTool(defineTool({
    name: "brick_probe",
    label: "Brick probe",
    description: "EXTENSION-BRICK-MARK: a tool only the declared extension adds",
    parameters: Type.Object({ note: Type.String() }),
    async execute(_id, params) {
      return { content: [{ type: "text", text: "EXTENSION-TOOL-RAN " + params.note }], details: {} };
    },
  }));
}
"""
SKILL = "---\nname: brick-skill\ndescription: SKILL-BRICK-MARK use when fixing arithmetic.\n---\n\nDo it.\n"
# One canary per file or variable: a canary shared by two traps would hide one nobody reads.
TRAPS = {
    "ancestor AGENTS.md": "CANARY-ANCESTOR-AGENTS",
    "nearer ancestor AGENTS.md": "CANARY-NEARER-ANCESTOR-AGENTS",
    "caller HOME pi AGENTS.md": "CANARY-HOME-PI-AGENTS",
    "caller HOME pi APPEND_SYSTEM.md": "CANARY-HOME-PI-APPEND-SYSTEM",
    "caller HOME ~/.agents/skills": "CANARY-HOME-AGENTS-SKILL",
    "caller HOME pi skills": "CANARY-HOME-PI-SKILL",
    "etalon .pi/SYSTEM.md": "CANARY-ETALON-PI-SYSTEM",
    "etalon .pi/APPEND_SYSTEM.md": "CANARY-ETALON-PI-APPEND-SYSTEM",
    "etalon .agents/skills": "CANARY-ETALON-AGENTS-SKILL",
    "caller environment": "CANARY-CALLER-ENV",
    "caller's provider key": "CANARY-CALLER-ANTHROPIC-KEY",
}
# Traps a user's pi does not read in this world, with the reason observed: checked to stay unread.
NOT_READ_NATIVELY = {
    "caller HOME pi APPEND_SYSTEM.md": f"pi {PI_VERSION} reads one APPEND_SYSTEM.md, the "
    "project's .pi/ one over the agent folder's (without the etalon's, the caller's is read)",
}
SCENARIO = Scenario(
    name="e2e", question="Does pi see exactly its bricks?", harness="pi", version=PI_VERSION
)
FULL = setup_axis(
    "full",
    context_files=["bricks/run-tests.md"],
    extensions=["bricks/probe.ts"],
    skills=["bricks/brick-skill"],
)


def pi_project_config(folder: Path) -> None:
    """Project config pi must not discover."""
    write(folder / ".pi" / "SYSTEM.md", f"{TRAPS['etalon .pi/SYSTEM.md']} replaces pi's\n")
    write(folder / ".pi" / "APPEND_SYSTEM.md", f"{TRAPS['etalon .pi/APPEND_SYSTEM.md']}\n")
    write(folder / ".pi" / "settings.json", json.dumps({"defaultThinkingLevel": "xhigh"}))
    skill = definition("etalon-skill", TRAPS["etalon .agents/skills"])
    write(folder / ".agents" / "skills" / "etalon-skill" / "SKILL.md", skill)


def make_scenario(root: Path, model: str, thinking="off", timeout="60s", bricks=True) -> Path:
    write(root / "bricks" / "run-tests.md", f"CONTEXT-BRICK-MARK {RULE}\n")
    write(root / "bricks" / "probe.ts", EXTENSION)
    write(root / "bricks" / "brick-skill" / "SKILL.md", SKILL)
    return SCENARIO.write_in(root, model, thinking, timeout, FULL if bricks else "")


@pytest.fixture
def world(tmp_path, pi_installation):
    return trapped_world(tmp_path)


def trapped_world(tmp_path: Path) -> dict:
    """An ancestor AGENTS.md above everything, a caller HOME full of pi config, an etalon."""
    world = new_world(tmp_path)
    root, home = world["root"], world["home"]
    write(tmp_path / "AGENTS.md", f"{TRAPS['ancestor AGENTS.md']}\n")
    write(root / "AGENTS.md", f"{TRAPS['nearer ancestor AGENTS.md']}\n")
    agent_dir = home / ".pi" / "agent"
    write(agent_dir / "AGENTS.md", f"{TRAPS['caller HOME pi AGENTS.md']}\n")
    write(agent_dir / "APPEND_SYSTEM.md", f"{TRAPS['caller HOME pi APPEND_SYSTEM.md']}\n")
    write(agent_dir / "settings.json", json.dumps({"defaultProjectTrust": "always"}))
    skill = definition("home-skill", TRAPS["caller HOME ~/.agents/skills"])
    write(home / ".agents" / "skills" / "home-skill" / "SKILL.md", skill)
    skill = definition("home-pi-skill", TRAPS["caller HOME pi skills"])
    write(agent_dir / "skills" / "home-pi-skill" / "SKILL.md", skill)
    world["env"] = {
        "AGENTAB_CANARY": TRAPS["caller environment"],
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "ANTHROPIC_API_KEY": TRAPS["caller's provider key"],
    }
    make_etalon(root / "etalon", pi_project_config)
    return world


@pytest.fixture(scope="module")
def unconfined(tmp_path_factory, pi_installation):
    """pi run as a user runs it, in the trapped world: one run, shared by every control."""
    world = trapped_world(tmp_path_factory.mktemp("unconfined"))

    def start(base_url: str) -> tuple[list[str], dict]:
        # A user's own model: a provider in models.json of the agent folder pi was pointed at.
        spec = RunSpec(Path(), Path(), "", "offline", "probe", "off", 0, model_base_url=base_url)
        models = offline_models_json(spec)
        write(world["home"] / ".pi" / "agent" / "models.json", models)
        argv = [*get_harness("pi").command(pi_installation), "--mode", "json", "--no-session"]
        argv += ["--provider", "offline", "--model", "probe", "--", "Fix mean in calc.py."]
        return argv, {}

    return run_unconfined(world, "probe", start, "pi")


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_reaches_pi_run_without_agentab(unconfined, trap):
    """The positive control: a trap pi never reads would let the test below pass whatever
    agentab does."""
    if trap in NOT_READ_NATIVELY:
        assert not unconfined.saw(TRAPS[trap]), f"pi reads {trap} now: make it a control"
    else:
        assert unconfined.saw(TRAPS[trap]), f"pi {PI_VERSION} does not read {trap}"


def test_the_etalon_thinking_setting_reaches_pi_run_without_agentab(unconfined):
    """The control of the etalon's `.pi/settings.json` (`defaultThinkingLevel: xhigh`), which
    the thinking test below checks agentab's run ignores. Observed: pi sends it as "high" to
    this model, and "medium" (its default) without the etalon's settings."""
    first = json.loads(unconfined.requests.splitlines()[0])["body"]
    assert first["reasoning_effort"] == "high"


def test_declared_bricks_reach_the_model_and_nothing_else_does(world):
    scenario = make_scenario(world["root"], "probe")
    done, out = run_step(world, scenario, "full")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["outcome"] == {"status": "completed", "reason": None}
    requests = requests_of(out)
    first = requests[0]["body"]
    system = first["messages"][0]["content"]
    assert "CONTEXT-BRICK-MARK" in system  # context file, appended by path
    assert "SKILL-BRICK-MARK" in system  # skill, by --skill
    assert "brick_probe" in [t["function"]["name"] for t in first["tools"]]  # extension, by -e
    # The tools ran: bash dumped its environment and HOME, the extension's tool answered.
    seen_by_model = (out / "model-requests.jsonl").read_text()
    assert "PI_CODING_AGENT_DIR=" in seen_by_model and "EXTENSION-TOOL-RAN" in seen_by_model
    stream = (out / "stream.jsonl").read_text()
    for trap, canary in TRAPS.items():
        assert canary not in seen_by_model, f"{trap} reached the model"
        assert canary not in stream, f"{trap} reached the agent or its tools"
    assert record["env"].keys() >= {"HOME", "PATH", "PI_CODING_AGENT_DIR", "TMPDIR"}
    assert "AGENTAB_CANARY" not in record["env"]
    assert [b["passed_as"].split()[0] for b in record["bricks"]] == [
        "--append-system-prompt",
        "-e",
        "--skill",
    ]
    assert (out / "result.patch").exists()


def test_without_bricks_the_baseline_sees_none_of_them(world):
    scenario = make_scenario(world["root"], "probe")
    done, out = run_step(world, scenario, "bare")
    assert done.returncode == 0, done.stderr
    seen = (out / "model-requests.jsonl").read_text()
    assert "CONTEXT-BRICK-MARK" not in seen and "SKILL-BRICK-MARK" not in seen
    assert "brick_probe" not in seen


@pytest.mark.parametrize("thinking, sent", [("high", "high"), ("off", None)])
def test_the_thinking_level_reaches_the_model(world, thinking, sent):
    scenario = make_scenario(world["root"], "demo", thinking=thinking, bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    assert {r["body"].get("reasoning_effort") for r in requests_of(out)} == {sent}
    record = json.loads((out / "run.json").read_text())
    assert record["thinking"] == thinking and "--thinking" in record["argv"]


def test_demo_run_writes_its_files_and_fixes_the_bug(world):
    scenario = make_scenario(world["root"], "demo", bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    assert {p.name for p in out.iterdir()} >= {
        "run.json",
        "stream.jsonl",
        "model-requests.jsonl",
        "result.patch",
    }
    record = json.loads((out / "run.json").read_text())
    assert record["offline_model"]["policy"] == "demo"
    assert record["facts"]["tool_calls"]["read"] == 1
    assert record["facts"]["cost_usd"] == 0  # the offline model costs nothing
    assert "calc.py" in (out / "result.patch").read_text()
    assert ".pi" not in (out / "result.patch").read_text()


def test_a_hung_agent_is_killed_at_the_timeout(world):
    scenario = make_scenario(world["root"], "hang", timeout="4s", bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["outcome"] == {"status": "failed", "reason": "timeout"}
    assert 4 <= record["duration_s"] < 15
    assert processes_in(world["root"] / "work") == []  # no pi left in the clone
    assert not (out / "agent.lock").exists()


@pytest.mark.parametrize(
    ("policy", "reason"),
    [("provider-error", "agent-error:"), ("context-overflow", "context-overflow:")],
)
def test_an_error_the_run_caused_makes_it_failed(world, policy, reason):
    scenario = make_scenario(world["root"], policy, bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    outcome = json.loads((out / "run.json").read_text())["outcome"]
    assert outcome["status"] == "failed" and outcome["reason"].startswith(reason)
    assert not (out / "faults.jsonl").exists()


@pytest.mark.parametrize("policy", ["server-error", "rate-limited", "overloaded"])
def test_a_transient_provider_error_is_a_fault_kept_in_faults_jsonl(world, policy):
    scenario = make_scenario(world["root"], policy, bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 3, done.stderr  # a fault: the workflow redoes the job
    assert "Traceback" not in done.stderr and "transient provider or network error" in done.stderr
    assert not (out / "run.json").exists()
    faults = [json.loads(line) for line in (out / "faults.jsonl").read_text().splitlines()]
    assert len(faults) == 1 and "transient provider or network error" in faults[0]["fault"]


def test_a_used_clone_is_cloned_again_before_the_agent_starts(world):
    scenario = make_scenario(world["root"], "demo", bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    clone = world["root"] / "work" / "baseline" / "r01" / "clone"
    write(clone / "LEFTOVER.txt", "from a failed attempt\n")
    done, out = run_step(world, scenario, "baseline", clone=clone)
    assert done.returncode == 0, done.stderr
    assert not (clone / "LEFTOVER.txt").exists()
    assert "LEFTOVER" not in (out / "result.patch").read_text()


def test_another_installed_version_is_refused(world, tmp_path):
    with pytest.raises(AgentabError, match="agent.version"):
        get_harness("pi").installation("9.9.9", HARNESSES_DIR)
    scenario = make_scenario(world["root"], "demo", bricks=False)
    scenario.write_text(scenario.read_text().replace(f'"{PI_VERSION}"', '"9.9.9"'))
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 2
    assert "agent.version" in done.stderr and "Traceback" not in done.stderr
    assert not (out / "run.json").exists()


def test_install_is_idempotent(pi_installation):
    marker = pi_installation.root / "installed.json"
    before = marker.stat().st_mtime_ns
    again = get_harness("pi").install(PI_VERSION, HARNESSES_DIR)
    assert again.entry == pi_installation.entry
    assert marker.stat().st_mtime_ns == before
    assert os.access(again.entry, os.R_OK)
