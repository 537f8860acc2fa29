"""Validate step: one validator on one run, in its own checkout of etalon + result.patch.

The validator never sees the clone the agent worked in (so editing a validator never reruns
an agent run) nor another validator's output. A run whose agent run failed is not scored.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from agentab.etalon import checkout_with_patch
from agentab.files import write_json
from agentab.scenario import load_scenario
from agentab.steps import add_run_arguments, run_step
from agentab.validators import invalid_output, judge_settings_from_config, prepare_job
from agentab.validators.context import build_context


def build(parser) -> None:
    add_run_arguments(parser)
    parser.add_argument("--validator", required=True)
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument(
        "--scratch-dir", type=Path, required=True, help="private to this job; removed after"
    )
    parser.add_argument("--mirrors-dir", type=Path, required=True)
    parser.add_argument(
        "--settings", default="{}", help="judge settings from the workflow config, as JSON"
    )


def act(args) -> int:
    # A validator runs in its own checkout: every path it is handed must be absolute.
    args.run_dir, args.scratch_dir, args.mirrors_dir = (
        p.absolute() for p in (args.run_dir, args.scratch_dir, args.mirrors_dir)
    )
    scenario = load_scenario(args.scenario, check_etalon=False, check_bricks=False)
    spec = scenario.validators[args.validator]
    cell = scenario.cell(args.cell)
    out = args.run_dir / "validators" / f"{spec.name}.json"
    run = json.loads((args.run_dir / "run.json").read_text(encoding="utf-8"))
    if (run.get("outcome") or {}).get("status") == "failed":
        write_json(invalid_output(spec.name, spec.mode, "not scored: the agent's run failed"), out)
        return 0
    context = build_context(args.run_dir, scenario.name, cell.slug, args.rep, cell.prompt)
    shared_context = args.scratch_dir.with_name(args.scratch_dir.name + ".context.json")
    write_json(context, shared_context)
    settings = judge_settings_from_config(json.loads(args.settings), Path.cwd())
    location, tag = scenario.etalon.location, scenario.etalon.tag
    try:
        job = prepare_job(
            spec,
            scenario_dir=scenario.dir,
            context_path=shared_context,
            scratch_dir=args.scratch_dir,
            checkout=lambda workdir, patch: checkout_with_patch(
                location, tag, patch, workdir, args.mirrors_dir
            ),
            settings=settings,
        )
        output = run_validator(job)
        keep_audit(job.audit_dir, args.run_dir / "validators" / spec.name)
        write_json(output, out)
    finally:
        shutil.rmtree(args.scratch_dir, ignore_errors=True)
        shared_context.unlink(missing_ok=True)
    print(f"{spec.name}: {'scored' if output['ok'] else 'invalid: ' + str(output['problem'])}")
    return 0


def run_validator(job) -> dict:
    if job.spec.mode == "script":
        from agentab.validators.script import run_script

        return run_script(job)
    if job.spec.mode == "judge":
        from agentab.validators.judge import run_judge

        return run_judge(job)
    raise ValueError(f"mode {job.spec.mode} has no per-run job")


def keep_audit(audit_dir: Path, destination: Path) -> None:
    """What a validator sent and received, kept beside its output for audit."""
    if destination.exists():
        shutil.rmtree(destination)
    if audit_dir.exists() and any(audit_dir.iterdir()):
        shutil.copytree(audit_dir, destination)


if __name__ == "__main__":
    run_step(build, act)
