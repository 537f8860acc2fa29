"""Validate step: one validator on one run (`agentab.validators.validation`).

`python -m agentab.steps.validate --scenario S --cell SLUG --rep N --validator V --record …
--transcript … --patch … --out … --audit … --lock … --secret … --work-root … --mirrors-dir …`
"""

from __future__ import annotations

import json
from pathlib import Path

from agentab.confinement.bwrap import BWRAP, MODES, require_sandbox
from agentab.layout import run_id
from agentab.scenario import load_scenario_for_step
from agentab.steps.common import add_run_arguments, run_step
from agentab.validators import RUNS_RUN_CODE, judge_settings_from_config
from agentab.validators.validation import ValidationFiles, validate_run

FILE_OPTIONS = {
    "record": "the run's run.json",
    "transcript": "the run's transcript.jsonl",
    "patch": "the run's result.patch",
    "out": "validators/<name>.json: the validator's output",
    "audit": "a folder for what the validator sent and received",
    "lock": "the lock holding the validator's process group",
    "secret": "the results folder's secret (opaque run ids)",
}


def build(parser) -> None:
    add_run_arguments(parser)
    parser.add_argument("--validator", required=True)
    for name, help_text in FILE_OPTIONS.items():
        parser.add_argument(f"--{name}", type=Path, required=True, help=help_text)
    parser.add_argument("--work-root", type=Path, required=True, help="private folders live here")
    parser.add_argument("--mirrors-dir", type=Path, required=True)
    parser.add_argument("--settings", default="{}", help="judge settings from the config, as JSON")
    parser.add_argument(
        "--confinement",
        choices=MODES,
        default=BWRAP,
        help="bwrap (default): a script runs in a sandbox; none: unconfined (config/config.yaml)",
    )


def act(args) -> int:
    scenario = load_scenario_for_step(args.scenario, check_bricks=False)
    spec = scenario.validators[args.validator]
    if spec.mode in RUNS_RUN_CODE:
        require_sandbox(args.confinement)
    files = ValidationFiles(
        record=args.record,
        transcript=args.transcript,
        patch=args.patch,
        output=args.out,
        audit=args.audit,
        lock=args.lock,
        secret=args.secret,
    )
    settings = judge_settings_from_config(json.loads(args.settings), Path.cwd())
    output = validate_run(
        scenario,
        scenario.run_cell(args.cell),
        spec,
        files,
        work_root=args.work_root,
        mirrors_dir=args.mirrors_dir,
        settings=settings,
        confinement=args.confinement,
    )
    print(f"{spec.name}: {'scored' if output['ok'] else 'invalid: ' + str(output['problem'])}")
    return 0


def ended(args) -> str:
    return (
        f"the validator {args.validator} of run {run_id(args.cell, args.rep)} was ended; it "
        "wrote no output and is redone on the next invocation"
    )


if __name__ == "__main__":
    run_step(build, act, ended)
