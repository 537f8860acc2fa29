"""Measure step: a run's measures.json from its run.json, its validators' outputs and the
checked answers of any filled form, and beside it the run in ATIF, trajectory.json, when the run
has a transcript (`agentab.synthesis.runs.measures`).

`python -m agentab.steps.measure --scenario S --cell SLUG --rep N --record run.json
--output validators/a.json --output … [--answers .form-keys/v.answers.json …] --out measures.json`
"""

from __future__ import annotations

from pathlib import Path

from agentab.scenario import load_scenario_for_step
from agentab.steps.common import add_run_arguments, run_step
from agentab.synthesis.runs.measures import measure_run


def build(parser) -> None:
    add_run_arguments(parser)
    parser.add_argument("--record", type=Path, required=True, help="the run's run.json")
    parser.add_argument(
        "--output", type=Path, action="append", default=[], help="a validator's output"
    )
    parser.add_argument(
        "--answers", type=Path, action="append", default=[], help="a filled form's answers"
    )
    parser.add_argument("--out", type=Path, required=True, help="measures.json")


def act(args) -> int:
    scenario = load_scenario_for_step(args.scenario, check_bricks=False)
    measures = measure_run(
        scenario,
        scenario.run_cell(args.cell),
        args.rep,
        args.record,
        args.output,
        args.answers,
        args.out,
    )
    print(f"{measures['run']}: {measures['status']}")
    return 0


if __name__ == "__main__":
    run_step(build, act)
