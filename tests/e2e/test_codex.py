"""One real Codex CLI run per test, through `python -m agentab.steps.run`, against the offline
model (the OpenAI Responses API).

Each test builds an etalon repository and a scenario in tmp_path, runs the step in a child
process whose HOME and environment carry traps, and reads what reached the model from
`model-requests.jsonl` (the offline model's log) and what reached the tools from the stream.
"""

import json
from pathlib import Path

import pytest

from agentab.harnesses import get_harness
from agentab.offline_model.wire import openai_responses
from tests.e2e.harness_world import (
    CODEX_VERSION,
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
from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SKILL = "---\nname: brick-skill\ndescription: SKILL-BRICK-MARK use when fixing arithmetic.\n---\n\nDo it.\n"
ROLE = 'description = "AGENT-BRICK-MARK reviews a change before it is final."\n'
# One canary per file, setting or variable, and no canary is a part of another: a failing check
# names the trap that leaked, and a canary shared by two traps would hide one nobody reads.
TRAPS = {
    "ancestor AGENTS.md": "CANARY-AGENTSMD-ANCESTOR",
    "ancestor AGENTS.override.md": "CANARY-OVERRIDE-ANCESTOR",
    "nearer ancestor AGENTS.md": "CANARY-AGENTSMD-NEARER",
    "nearer ancestor AGENTS.override.md": "CANARY-OVERRIDE-NEARER",
    "work folder AGENTS.md": "CANARY-AGENTSMD-WORK",
    "work folder AGENTS.override.md": "CANARY-OVERRIDE-WORK",
    "etalon AGENTS.md": "CANARY-AGENTSMD-ETALON",
    "etalon AGENTS.override.md": "CANARY-OVERRIDE-ETALON",
    "etalon .codex/config.toml": "CANARY-CONFIG-ETALON",
    "etalon .agents/skills": "CANARY-SKILL-ETALON-AGENTS",
    "etalon .codex/skills": "CANARY-SKILL-ETALON-CODEX",
    "caller CODEX_HOME AGENTS.md": "CANARY-CODEXHOME-AGENTSMD",
    "caller CODEX_HOME config.toml": "CANARY-CODEXHOME-CONFIG",
    "caller CODEX_HOME skills": "CANARY-CODEXHOME-SKILL",
    "caller HOME skill": "CANARY-SKILL-HOME",
    "caller environment": "CANARY-ENV-CALLER",
    "caller OPENAI_API_KEY": "CANARY-ENV-OPENAI-KEY",
    "caller CODEX_API_KEY": "CANARY-ENV-CODEX-KEY",
}
# Traps a user's Codex does not read in this world, with the reason observed: checked to stay
# unread.
ABOVE_GIT_ROOT = "Codex reads AGENTS files from the git root (the checkout) down to the cwd"
NOT_READ_NATIVELY = {
    "ancestor AGENTS.md": ABOVE_GIT_ROOT,
    "ancestor AGENTS.override.md": ABOVE_GIT_ROOT,
    "nearer ancestor AGENTS.md": ABOVE_GIT_ROOT,
    "nearer ancestor AGENTS.override.md": ABOVE_GIT_ROOT,
    "work folder AGENTS.md": ABOVE_GIT_ROOT,
    "work folder AGENTS.override.md": ABOVE_GIT_ROOT,
    "etalon AGENTS.md": "AGENTS.override.md of the same folder is read instead",
    "caller CODEX_HOME config.toml": "the trusted project's developer_instructions win",
}

assert not any(a != b and a in b for a in TRAPS.values() for b in TRAPS.values())

SCENARIO = Scenario(
    name="e2e-codex",
    question="Does Codex see exactly its bricks?",
    harness="codex",
    version=CODEX_VERSION,
)
FULL = setup_axis(
    "full",
    context_files=["bricks/run-tests.md"],
    skills=["bricks/brick-skill"],
    agents=["bricks/agents/reviewer.toml"],
)


def codex_project_config(folder: Path) -> None:
    """The context and config Codex must not discover."""
    write(folder / "AGENTS.md", f"{TRAPS['etalon AGENTS.md']}\n")
    write(folder / "AGENTS.override.md", f"{TRAPS['etalon AGENTS.override.md']}\n")
    config = (
        f'developer_instructions = "{TRAPS["etalon .codex/config.toml"]}"\n'
        'model_reasoning_effort = "xhigh"\nproject_doc_max_bytes = 32768\n'
    )
    write(folder / ".codex" / "config.toml", config)
    skill = definition("etalon-skill", TRAPS["etalon .agents/skills"])
    write(folder / ".agents" / "skills" / "etalon-skill" / "SKILL.md", skill)
    skill = definition("etalon-codex-skill", TRAPS["etalon .codex/skills"])
    write(folder / ".codex" / "skills" / "etalon-codex-skill" / "SKILL.md", skill)


def make_scenario(root: Path, model: str, thinking="off", timeout="60s", bricks=True) -> Path:
    write(root / "bricks" / "run-tests.md", f"CONTEXT-BRICK-MARK {RULE}\n")
    write(root / "bricks" / "brick-skill" / "SKILL.md", SKILL)
    write(root / "bricks" / "agents" / "reviewer.toml", ROLE)
    return SCENARIO.write_in(root, model, thinking, timeout, FULL if bricks else "")


@pytest.fixture
def world(tmp_path, codex_installation):
    return trapped_world(tmp_path)


def trapped_world(tmp_path: Path) -> dict:
    """AGENTS files above everything and above the clones, a caller HOME full of Codex config,
    an etalon with its own."""
    world = new_world(tmp_path)
    root, home = world["root"], world["home"]
    for folder, which in ((tmp_path, "ancestor"), (root, "nearer ancestor")):
        write(folder / "AGENTS.md", f"{TRAPS[f'{which} AGENTS.md']}\n")
        write(folder / "AGENTS.override.md", f"{TRAPS[f'{which} AGENTS.override.md']}\n")
    # The clones' own ancestor, below the project's.
    write(root / "work" / "AGENTS.md", f"{TRAPS['work folder AGENTS.md']}\n")
    write(root / "work" / "AGENTS.override.md", f"{TRAPS['work folder AGENTS.override.md']}\n")
    codex_home = home / ".codex"
    write(codex_home / "AGENTS.md", f"{TRAPS['caller CODEX_HOME AGENTS.md']}\n")
    config = f'developer_instructions = "{TRAPS["caller CODEX_HOME config.toml"]}"\n'
    write(codex_home / "config.toml", config)
    skill = definition("home", TRAPS["caller CODEX_HOME skills"])
    write(codex_home / "skills" / "home-skill" / "SKILL.md", skill)
    skill = definition("home-skill", TRAPS["caller HOME skill"])
    write(home / ".agents" / "skills" / "home-skill" / "SKILL.md", skill)
    world["env"] = {
        "AGENTAB_CANARY": TRAPS["caller environment"],
        "CODEX_HOME": str(codex_home),
        "OPENAI_API_KEY": TRAPS["caller OPENAI_API_KEY"],
        "CODEX_API_KEY": TRAPS["caller CODEX_API_KEY"],
    }
    make_etalon(root / "etalon", codex_project_config)
    return world


@pytest.fixture(scope="module")
def unconfined(tmp_path_factory, codex_installation):
    """Codex run as a user runs it, in the trapped world: one run, shared by every control."""
    world = trapped_world(tmp_path_factory.mktemp("unconfined"))

    def start(base_url: str) -> tuple[list[str], dict]:
        # A user's own model as a provider of theirs, and their repository trusted, in their
        # config: what `codex` asks for the first time it is started in a repository.
        etalon = json.dumps(str(world["root"] / "etalon"))
        with (world["home"] / ".codex" / "config.toml").open("a") as config:
            config.write(
                'model_provider = "offline"\n[model_providers.offline]\nname = "offline"\n'
                f'base_url = "{base_url}/v1"\nwire_api = "responses"\n'
                f'[projects.{etalon}]\ntrust_level = "trusted"\n'
            )
        argv = [*get_harness("codex").command(codex_installation), "exec", "--json"]
        argv += ["--sandbox", "workspace-write", "--model", "probe", "--", "Fix mean in calc.py."]
        return argv, {}

    return run_unconfined(world, "probe", start, "codex")


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_reaches_codex_run_without_agentab(unconfined, trap):
    """The positive control: a trap Codex never reads would let the test below pass whatever
    agentab does."""
    if trap in NOT_READ_NATIVELY:
        assert not unconfined.saw(TRAPS[trap]), f"Codex reads {trap} now: make it a control"
    else:
        assert unconfined.saw(TRAPS[trap]), f"Codex {CODEX_VERSION} does not read {trap}"


def developer_text(body: dict) -> str:
    return openai_responses.conversation(body).system


def test_declared_bricks_reach_the_model_and_nothing_else_does(world):
    scenario = make_scenario(world["root"], "probe")
    done, out = run_step(world, scenario, "full")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["outcome"] == {"status": "completed", "reason": None}
    first = requests_of(out)[0]["body"]
    assert "CONTEXT-BRICK-MARK" in developer_text(first)  # developer_instructions
    assert "SKILL-BRICK-MARK" in json.dumps(first["input"])  # the skill, listed
    assert "AGENT-BRICK-MARK" in json.dumps(first["tools"])  # the role, in the spawn tool
    # The tools ran: the shell dumped its environment and HOME into the model's next request.
    seen_by_model = (out / "model-requests.jsonl").read_text()
    assert "CODEX_HOME=" in seen_by_model
    stream = (out / "stream.jsonl").read_text()
    for trap, canary in TRAPS.items():
        assert canary not in seen_by_model, f"{trap} reached the model"
        assert canary not in stream, f"{trap} reached the agent or its tools"
    assert record["env"].keys() >= {"HOME", "PATH", "CODEX_HOME", "TMPDIR"}
    assert "AGENTAB_CANARY" not in record["env"] and "OPENAI_API_KEY" not in record["env"]
    assert [b["passed_as"].split()[0] for b in record["bricks"]] == [
        "developer_instructions",
        "copied",
        "agents.reviewer.config_file",
    ]
    assert str(world["root"] / "work") not in (out / "transcript.jsonl").read_text()


def test_without_bricks_the_baseline_sees_none_of_them(world):
    scenario = make_scenario(world["root"], "probe")
    done, out = run_step(world, scenario, "bare")
    assert done.returncode == 0, done.stderr
    seen = (out / "model-requests.jsonl").read_text()
    for mark in ("CONTEXT-BRICK-MARK", "SKILL-BRICK-MARK", "AGENT-BRICK-MARK"):
        assert mark not in seen


@pytest.mark.parametrize("thinking, effort", [("high", "high"), ("off", "none")])
def test_the_thinking_level_reaches_the_model(world, thinking, effort):
    scenario = make_scenario(world["root"], "demo", thinking=thinking, bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    bodies = [r["body"] for r in requests_of(out)]
    assert {b["reasoning"]["effort"] for b in bodies} == {effort}
    sent = get_harness("codex").sent_thinking(thinking, "demo")
    assert {openai_responses.conversation(b).thinking for b in bodies} == {sent}


def test_demo_run_writes_its_files_and_edits_calc(world):
    scenario = make_scenario(world["root"], "demo", bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    assert {p.name for p in out.iterdir()} >= {
        "run.json",
        "stream.jsonl",
        "transcript.jsonl",
        "model-requests.jsonl",
        "result.patch",
    }
    record = json.loads((out / "run.json").read_text())
    assert record["offline_model"]["policy"] == "demo"
    assert record["facts"]["tool_calls"]["file_change"] == 1
    assert record["facts"]["cost_usd"] is None and record["facts"]["tokens"]["input"] > 0
    patch = (out / "result.patch").read_text()
    assert "calc.py" in patch and ".codex" not in patch and ".agents" not in patch
    kinds = [
        call["kind"]
        for line in map(json.loads, (out / "transcript.jsonl").read_text().splitlines())
        for call in line.get("tool_calls", [])
    ]
    assert kinds[:2] == ["run", "edit"]  # cat calc.py, then the patch
    check_trajectory(out, "codex")


def test_a_hung_agent_is_killed_at_the_timeout(world):
    scenario = make_scenario(world["root"], "hang", timeout="4s", bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["outcome"] == {"status": "failed", "reason": "timeout"}
    assert 4 <= record["duration_s"] < 15
    assert processes_in(world["root"] / "work") == []  # no codex left in the clone
    assert not (out / "agent.lock").exists()


def test_a_provider_error_makes_the_run_failed(world):
    scenario = make_scenario(world["root"], "provider-error", bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["exit_code"] == 1
    outcome = record["outcome"]
    assert outcome["status"] == "failed" and outcome["reason"].startswith("agent-error:")
    assert "simulated provider error" in outcome["reason"]


def test_a_server_that_keeps_failing_is_a_fault_not_a_hang(world):
    policy = write(
        world["root"] / "overloaded.toml",
        '[policy]\ndescription = "HTTP 500 on every request."\nfail_status = 500\n',
    )
    scenario = make_scenario(world["root"], str(policy), timeout="2m", bricks=False)
    done, out = run_step(world, scenario, "baseline")
    assert done.returncode == 3, done.stderr  # a fault: the workflow redoes the run
    assert "high demand" in done.stderr and "Traceback" not in done.stderr
    assert not (out / "run.json").exists()
    # A fault is no outcome: its attempt's requests are kept apart, the run has none yet.
    kept = out / "earlier-attempts" / "attempt-1-model-requests.jsonl"
    assert len(kept.read_text().splitlines()) > 1  # Codex retried before it gave up


def test_the_demo_matrix_runs_on_codex_and_each_cell_gets_its_treatment(
    tmp_path, codex_installation
):
    project = make_project(
        tmp_path / "project", HARNESSES_DIR, repetitions=2, scenario="demo-codex"
    )
    result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    runs = project / "results" / "demo-codex" / "runs"
    expected = {"nothing-off": ("none", False), "nothing-high": ("high", False)}
    expected |= {"rule-off": ("none", True), "rule-high": ("high", True)}
    for cell, (effort, rule) in expected.items():
        for rep in ("r01", "r02"):
            measures = json.loads((runs / cell / rep / "measures.json").read_text())
            assert measures["status"] == "valid", measures["problems"]
            assert measures["provenance"]["harness"] == "codex"
            bodies = [r["body"] for r in requests_of(runs / cell / rep)]
            assert {b["reasoning"]["effort"] for b in bodies} == {effort}
            delivered = {"always run the test suite" in developer_text(b) for b in bodies}
            assert delivered == {rule}
            check_trajectory(runs / cell / rep, "codex")  # written by the measure step
    assert "ran_tests" in (project / "results" / "demo-codex" / "synthesis.md").read_text()
