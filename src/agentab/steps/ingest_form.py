"""Ingest step: check a filled form once and keep its answers for the measure jobs.

Checking a form reads every run's validator outputs (a form may not fill a metric another
validator produces); done once here, not once per measure job.
"""

from __future__ import annotations

from pathlib import Path

from agentab.files import write_json
from agentab.scenario import load_scenario
from agentab.steps.common import run_step
from agentab.validators.form import read_form_answers


def build(parser) -> None:
    parser.add_argument("--scenario", type=Path, required=True)
    parser.add_argument("--validator", required=True, help="the form validator")
    parser.add_argument("--results-dir", type=Path, required=True, help="results/<scenario>/")
    parser.add_argument("--out", type=Path, required=True, help="the checked answers (JSON)")


def act(args) -> int:
    scenario = load_scenario(args.scenario, check_etalon=False, check_bricks=False)
    form = read_form_answers(args.results_dir, scenario, args.validator)
    write_json(
        {"answers": form.answers, "pending": form.pending},
        args.out,
    )
    print(f"{args.validator}: {len(form.answers)} runs answered, {len(form.pending)} pending")
    return 0


if __name__ == "__main__":
    run_step(build, act)
