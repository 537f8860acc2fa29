"""Measure step: a run's measures.json from its run.json, its validators' outputs and any form."""

from __future__ import annotations

import json
from pathlib import Path

from agentab.files import write_json
from agentab.measures import build_measures, run_id
from agentab.scenario import load_scenario
from agentab.steps import add_run_arguments, run_step


def build(parser) -> None:
    add_run_arguments(parser)
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--results-dir", type=Path, required=True, help="results/<scenario>/")


def act(args) -> int:
    scenario = load_scenario(args.scenario, check_etalon=False, check_bricks=False)
    cell = scenario.cell(args.cell)
    run = json.loads((args.run_dir / "run.json").read_text(encoding="utf-8"))
    outputs = {
        name: json.loads((args.run_dir / "validators" / f"{name}.json").read_text(encoding="utf-8"))
        for name, spec in scenario.validators.items()
        if spec.mode != "form"
    }
    answers = filled_form_answers(scenario, args.results_dir, run_id(cell.slug, args.rep))
    measures = build_measures(scenario, cell, args.rep, run, outputs, answers)
    write_json(measures, args.run_dir / "measures.json")
    print(f"{measures['run']}: {measures['status']}")
    return 0


def filled_form_answers(scenario, results_dir: Path, run: str) -> dict[str, dict]:
    """Answers a person filled for this run, per form validator, as the ingest step checked
    them; {} where no form is filled yet."""
    from agentab.validators.form import checked_answers_path, filled_form_path

    answers = {}
    for name, spec in scenario.validators.items():
        if spec.mode == "form" and filled_form_path(results_dir, name).exists():
            checked = json.loads(
                checked_answers_path(results_dir, name).read_text(encoding="utf-8")
            )
            answers[name] = checked["answers"].get(run, {})
    return answers


if __name__ == "__main__":
    run_step(build, act)
