"""Freeze step: results/<name>/scenario.toml, the scenario exactly as it was run, its bricks in
results/<name>/bricks/ (`run/frozen_bricks.py`) and its other inputs (offline policies, rubrics,
schemas, script validators' files) in results/<name>/inputs/ (`run/frozen_inputs.py`); one
edited later is frozen by the first job that has it."""

from __future__ import annotations

from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.layout import ResultsFolder
from agentab.run.frozen_bricks import frozen_brick
from agentab.run.frozen_inputs import frozen_copy, scenario_inputs
from agentab.scenario import load_scenario
from agentab.steps.common import run_step


def build(parser) -> None:
    parser.add_argument("--scenario", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)


def act(args) -> int:
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial")
    try:
        text = args.scenario.read_bytes()
    except OSError as error:
        raise AgentabError(
            problem(
                args.scenario, "scenario", f"cannot read it: {error.strerror}", "check the path"
            )
        ) from error
    partial.write_bytes(text)
    partial.replace(args.out)
    if not args.scenario.is_file():  # a stream (a pipe) is read once: its bricks at first use
        return 0
    scenario = load_scenario(args.scenario, check_etalon=False)
    results = ResultsFolder(args.out.parent)
    for brick in {brick.sha256: brick for cell in scenario.cells for brick in cell.bricks}.values():
        frozen_brick(brick, results.bricks)
    for item in scenario_inputs(scenario):
        frozen_copy(item, results.inputs)
    return 0


if __name__ == "__main__":
    run_step(build, act)
