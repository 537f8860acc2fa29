"""The world a harness end-to-end test runs one real agent in, and the run step that runs it.

A test builds an etalon repository and a scenario in tmp_path and runs `python -m
agentab.steps.run` for one cell in a child process whose HOME and environment carry traps: the
files and variables the harness would read on a user's machine and must not. What reached the
model is in `model-requests.jsonl` (the offline model's log), what reached the tools in the stream.

A trap proves something only if the harness reads it: `run_unconfined` is the positive control,
the same harness run in the same trapped world as a user runs it without agentab, where each
canary must reach the model.

The traps, the bricks and the caller's variables belong to one harness and stay in its test file;
the layout, the etalon's code and the way the step is called are the same for every harness.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import atif
from atif_scan import load_trace

from agentab.etalon import fresh_clone
from agentab.harnesses.npm import base_path
from agentab.offline_model import serve
from agentab.trajectory import write_trajectory
from tests.conftest import make_git_repo
from tests.e2e.workflow import REPO

HARNESSES_DIR = REPO / ".agentab" / "harnesses"  # git-ignored; shared by every test session
# Here, not in each test file, because the conftest installs them and the tests name them too.
PI_VERSION = "1.6.0"
CLAUDE_CODE_VERSION = "2.1.332"
CODEX_VERSION = "0.171.0"
GEMINI_VERSION = "0.61.0"

TAG = "v1.0"
CALC = "def mean(values):\n    return sum(values) / (len(values) - 1)\n\n\ndef add(a, b):\n    return a + b\n"
TESTS = (
    "import unittest\nfrom calc import add, mean\n\n\nclass T(unittest.TestCase):\n"
    "    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n\n"
    "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n"
)
RULE = (
    "Before you finish, always run the test suite with `python3 -m unittest` and report the result."
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def definition(name: str, description: str, body: str = "x") -> str:
    """A SKILL.md or an agent's file: every harness reads the same front matter."""
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"


def new_world(tmp_path: Path) -> dict:
    """The project (etalon, clones, results) one level below tmp_path, so that a trap can stand in
    an ancestor of every folder the agent works in, and the caller's HOME beside it.

    `env` is what the caller adds to the step's environment: its harness's own variables.
    """
    return {
        "tmp": tmp_path,
        "root": tmp_path / "project",
        "home": tmp_path / "caller-home",
        "env": {},
    }


def make_etalon(folder: Path, project_config: Callable[[Path], object]) -> Path:
    """The demo's calc repository, with the project configuration `project_config` writes into it:
    committed, because a harness discovers what a user's repository holds."""
    project_config(folder)
    make_git_repo(folder, {"calc.py": CALC, "test_calc.py": TESTS}, tag=TAG)
    return folder


def setup_axis(cell: str, **bricks: list[str]) -> str:
    """An axis `setup` of the bare baseline and `cell`, which adds the bricks (kind -> paths)."""
    lines = "".join(f"{kind} = {json.dumps(paths)}\n" for kind, paths in bricks.items())
    return f'[axes]\nsetup = ["bare", "{cell}"]\n\n[deltas.setup.{cell}]\n{lines}'


@dataclass(frozen=True)
class Scenario:
    """What every scenario of one harness's tests says: its name and question, the harness and
    its version."""

    name: str
    question: str
    harness: str
    version: str

    def write_in(self, root: Path, model: str, thinking: str, timeout: str, deltas="") -> Path:
        """One repetition of the demo's task on the offline model `model` (a policy's name or
        file), the etalon in root; `deltas` declares the cells beside the baseline."""
        text = f"""
[scenario]
name = "{self.name}"
question = "{self.question}"

[task]
prompt = "The function `mean` in calc.py returns wrong results. Fix it."

[etalon]
repo = "{root / "etalon"}"
tag = "{TAG}"

[agent]
harness = "{self.harness}"
version = "{self.version}"
provider = "offline"
model = "{model}"
thinking = "{thinking}"
timeout = "{timeout}"

[protocol]
repetitions = 1

{deltas}
[protocol.limits]
memory = "2G"
processes = 256
disk = "1G"
patch = "1M"

[validation]
metrics = ["tests_pass"]

[validators.tests]
mode = "script"
run = ["check.py"]
"""
        write(root / "check.py", "#!/usr/bin/env python3\nprint('{}')\n").chmod(0o755)
        return write(root / "scenario.toml", text)


def run_step(
    world: dict, scenario: Path, cell: str, rep=1, clone=None, timeout=300
) -> tuple[subprocess.CompletedProcess, Path]:
    """The run step for one cell, as the workflow calls it, with the caller's HOME and variables:
    whatever of them reaches the agent is a leak."""
    root = world["root"]
    out = root / "results" / cell / f"r{rep:02d}"
    clone = clone or root / "work" / cell / f"r{rep:02d}" / "clone"
    if not clone.exists():
        fresh_clone(str(root / "etalon"), TAG, clone, root / "mirrors")
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(world["home"]),
        "PYTHONPATH": str(REPO / "src"),
        **world["env"],
    }
    argv = [sys.executable, "-m", "agentab.steps.run", "--scenario", str(scenario)]
    argv += ["--cell", cell, "--rep", str(rep), "--clone", str(clone), "--out", str(out)]
    argv += ["--harnesses-dir", str(HARNESSES_DIR), "--mirrors-dir", str(root / "mirrors")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    return done, out


def requests_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "model-requests.jsonl").read_text().splitlines()]


def processes_in(folder: Path) -> list[int]:
    """Processes whose working directory is in folder: an agent or a tool of its that outlived
    its run."""
    found = []
    for cwd in Path("/proc").glob("[0-9]*/cwd"):
        try:
            if cwd.resolve().is_relative_to(folder.resolve()):
                found.append(int(cwd.parent.name))
        except OSError:
            continue
    return found


@dataclass(frozen=True)
class Unconfined:
    """What one harness run without agentab let through: the model's requests, the stream."""

    requests: str
    stream: str
    stderr: str

    def saw(self, canary: str) -> bool:
        return canary in self.requests or canary in self.stream


def run_unconfined(
    world: dict,
    policy: str,
    start: Callable[[str], tuple[list[str], dict]],
    harness: str,
    timeout=180,
) -> Unconfined:
    """The real harness as a user starts it without agentab: in the etalon checkout, with the
    trapped caller's HOME and variables and the harness's own discovery on, pointed at the
    offline model serving `policy` to `harness`. `start(base_url)` gives its argv and the
    variables (or writes the config) a user would set for a model of their own."""
    log = world["tmp"] / "unconfined" / "model-requests.jsonl"
    with serve(policy, 0, log, harness=harness) as base_url:
        argv, endpoint = start(base_url)
        env = {"PATH": base_path(), "HOME": str(world["home"]), **world["env"], **endpoint}
        done = subprocess.run(
            argv,
            cwd=world["root"] / "etalon",
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    return Unconfined(log.read_text(), done.stdout, done.stderr)


def check_trajectory(out: Path, harness: str) -> atif.Trajectory:
    """The run in `out` as the field reads it: the trajectory.json the measure step writes from
    its transcript, taken by ATIF's own models and loaded by a reader (atif-scan), with the
    harness's calls and run.json's totals in it."""
    record = json.loads((out / "run.json").read_text())
    trajectory = out / "trajectory.json"
    if not trajectory.exists():  # a run step's folder: the measure step's own writer makes it
        write_trajectory(out / "transcript.jsonl", record, trajectory)
    parsed = atif.Trajectory.model_validate_json(trajectory.read_bytes())
    assert parsed.agent.name == harness and parsed.steps[0].source == "user"
    calls = [call for step in parsed.steps for call in step.tool_calls or []]
    assert len(calls) == sum(record["facts"]["tool_calls"].values()) > 0
    answered = {
        r.source_call_id for s in parsed.steps if s.observation for r in s.observation.results
    }
    assert answered >= {call.tool_call_id for call in calls}  # every call's result came back
    tokens = record["facts"]["tokens"]
    assert parsed.final_metrics.total_completion_tokens == tokens["output"] > 0
    assert load_trace(trajectory).steps
    return parsed
