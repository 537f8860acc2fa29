"""One real pi run per test, through `python -m agentab.steps.run`, against the offline model.

Each test builds an etalon repository and a scenario in tmp_path, runs the step in a child
process whose HOME and environment carry traps, and reads what reached the model from
`model-requests.jsonl` (the offline model's log) and what reached the tools from the stream.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.etalon import fresh_clone
from agentab.harnesses import get_harness

REPO = Path(__file__).resolve().parents[2]
HARNESSES_DIR = REPO / ".agentab" / "harnesses"  # where the session fixture installs pi
PI_VERSION = "1.6.0"

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
TRAPS = {
    "ancestor AGENTS.md": "CANARY-ANCESTOR-AGENTS",
    "caller HOME pi config": "CANARY-HOME-PI-CONFIG",
    "caller HOME skill": "CANARY-HOME-SKILL",
    "etalon .pi": "CANARY-ETALON-DOT-PI",
    "etalon .agents/skills": "CANARY-ETALON-AGENTS-SKILL",
    "caller environment": "CANARY-CALLER-ENV",
}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def git(*args, cwd):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def make_etalon(folder: Path) -> Path:
    """The demo's calc repository, plus project config pi must not discover."""
    write(folder / "calc.py", CALC)
    write(folder / "test_calc.py", TESTS)
    write(folder / ".pi" / "SYSTEM.md", f"{TRAPS['etalon .pi']} system prompt replaced\n")
    write(folder / ".pi" / "APPEND_SYSTEM.md", f"{TRAPS['etalon .pi']} appended\n")
    write(folder / ".pi" / "settings.json", json.dumps({"defaultThinkingLevel": "xhigh"}))
    skill = f"---\nname: etalon-skill\ndescription: {TRAPS['etalon .agents/skills']}\n---\nx\n"
    write(folder / ".agents" / "skills" / "etalon-skill" / "SKILL.md", skill)
    git("init", "-q", cwd=folder)
    git("add", "-A", cwd=folder)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "etalon", cwd=folder)
    git("tag", "v1.0", cwd=folder)
    return folder


def make_scenario(root: Path, model: str, thinking="off", timeout="60s", bricks=True) -> Path:
    write(root / "bricks" / "run-tests.md", f"CONTEXT-BRICK-MARK {RULE}\n")
    write(root / "bricks" / "probe.ts", EXTENSION)
    write(root / "bricks" / "brick-skill" / "SKILL.md", SKILL)
    deltas = ""
    if bricks:
        deltas = (
            '[axes]\nsetup = ["bare", "full"]\n\n[deltas.setup.full]\n'
            'context_files = ["bricks/run-tests.md"]\nextensions = ["bricks/probe.ts"]\n'
            'skills = ["bricks/brick-skill"]\n'
        )
    text = f"""
[scenario]
name = "e2e"
question = "Does pi see exactly its bricks?"

[task]
prompt = "The function `mean` in calc.py returns wrong results. Fix it."

[etalon]
repo = "{root / "etalon"}"
tag = "v1.0"

[agent]
harness = "pi"
version = "{PI_VERSION}"
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
def world(tmp_path, pi_installation):
    """An ancestor AGENTS.md above everything, a caller HOME full of pi config, an etalon."""
    root = tmp_path / "project"
    write(tmp_path / "AGENTS.md", f"{TRAPS['ancestor AGENTS.md']}\n")
    write(root / "AGENTS.md", f"{TRAPS['ancestor AGENTS.md']} (nearer)\n")
    home = tmp_path / "caller-home"
    write(home / ".pi" / "agent" / "AGENTS.md", f"{TRAPS['caller HOME pi config']}\n")
    write(home / ".pi" / "agent" / "APPEND_SYSTEM.md", f"{TRAPS['caller HOME pi config']}\n")
    write(home / ".pi" / "agent" / "settings.json", json.dumps({"defaultProjectTrust": "always"}))
    skill = f"---\nname: home-skill\ndescription: {TRAPS['caller HOME skill']}\n---\nx\n"
    write(home / ".agents" / "skills" / "home-skill" / "SKILL.md", skill)
    write(home / ".pi" / "agent" / "skills" / "home-skill2" / "SKILL.md", skill)
    make_etalon(root / "etalon")
    return {"tmp": tmp_path, "root": root, "home": home}


def run_step(
    world, scenario: Path, cell: str, rep=1, clone=None
) -> tuple[subprocess.CompletedProcess, Path]:
    out = world["root"] / "results" / cell / f"r{rep:02d}"
    clone = clone or world["root"] / "work" / cell / f"r{rep:02d}" / "clone"
    if not clone.exists():
        fresh_clone(str(world["root"] / "etalon"), "v1.0", clone, world["root"] / "mirrors")
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(world["home"]),
        "PYTHONPATH": str(REPO / "src"),
        "AGENTAB_CANARY": TRAPS["caller environment"],
        "PI_CODING_AGENT_DIR": str(world["home"] / ".pi" / "agent"),
        "ANTHROPIC_API_KEY": TRAPS["caller environment"],
    }
    argv = [
        sys.executable,
        "-m",
        "agentab.steps.run",
        "--scenario",
        str(scenario),
        "--cell",
        cell,
        "--rep",
        str(rep),
        "--clone",
        str(clone),
        "--out",
        str(out),
        "--harnesses-dir",
        str(HARNESSES_DIR),
        "--mirrors-dir",
        str(world["root"] / "mirrors"),
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    return done, out


def requests_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "model-requests.jsonl").read_text().splitlines()]


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
    assert "Traceback" not in done.stderr and "transient provider error" in done.stderr
    assert not (out / "run.json").exists()
    faults = [json.loads(line) for line in (out / "faults.jsonl").read_text().splitlines()]
    assert len(faults) == 1 and "transient provider error" in faults[0]["fault"]


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
