"""Validators are blind in every byte (docs/validators.md): a spy validator, run through the real
workflow, finds no cell name, slug, axis value, brick, harness setting or sibling's output in
anything it is handed or can list from there."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SPY = Path(__file__).parent / "spy" / "spy.py"
BRICK_MARK = "ZQBRICKTEXT"
# What a blind validator must never see: every cell name and slug, the axis values, the brick's
# file name and text, pi's system prompt and thinking setting, the siblings' output files.
FORBIDDEN = [
    "zqplain", "zqrule", "zqbrick", BRICK_MARK, "thinkingLevel", "reasoning_effort",
    "coding assistant running inside", "tests.json", "behaviour.json", "measures.json",
]  # fmt: skip

SCENARIO = """
[scenario]
name = "demo"

[task]
prompt_file = "task.md"

[etalon]
repo = "calc.bundle"
tag = "v1.0"

[agent]
harness = "pi"
version = "1.6.0"
provider = "offline"
model = "demo"
thinking = "off"
timeout = "2m"

[protocol]
repetitions = 1

[protocol.limits]
memory = "2G"
processes = 256
disk = "1G"
patch = "1M"

[axes]
context = ["zqplain", "zqrule"]
thinking = ["off", "high"]

[deltas.context.zqrule]
context_files = ["bricks/zqbrick.md"]

[deltas.thinking.high]
thinking = "high"

[validation]
metrics = ["tests_pass", "blind"]

[validators.tests]
mode = "tests"
runner = "unittest"
tests = ["test_calc.py"]

[validators.behaviour]
mode = "script"
run = ["validators/behaviour.py"]

[validators.spy]
mode = "script"
run = ["validators/spy.py"]
"""


def test_a_spy_validator_finds_nothing_that_names_its_cell(tmp_path, pi_installation):
    project = make_project(tmp_path / "blind", pi_installation.root.parents[1], repetitions=1)
    demo = project / "demo"
    rule = (demo / "bricks" / "run-tests.md").read_text()
    (demo / "bricks" / "zqbrick.md").write_text(f"{BRICK_MARK} {rule}")
    shutil.copy(SPY, demo / "validators" / "spy.py")
    (demo / "validators" / "forbidden.json").write_text(json.dumps(FORBIDDEN))
    (demo / "scenario.toml").write_text(SCENARIO)
    result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    outputs = sorted((project / "results" / "demo" / "runs").glob("*/r01/validators/spy.json"))
    assert len(outputs) == 4
    for path in outputs:
        spy = json.loads(path.read_text())
        assert spy["ok"], spy
        assert spy["metrics"]["leaks"] == [], (path, spy["metrics"]["leaks"])
        assert spy["metrics"]["counts"] == [], (path, spy["metrics"]["counts"])
    # The control: handed the run folder's own files, the same spy finds the cell at once.
    run = project / "results" / "demo" / "runs" / "zqrule-high" / "r01"
    context = {"workdir": str(run), "transcript": str(run / "stream.jsonl")}
    context["patch"] = str(run / "result.patch")
    (tmp_path / "context.json").write_text(json.dumps(context))
    done = subprocess.run(
        [sys.executable, str(demo / "validators" / "spy.py"), str(tmp_path / "context.json")],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
        cwd=run,
    )
    assert json.loads(done.stdout)["metrics"]["blind"] is False
