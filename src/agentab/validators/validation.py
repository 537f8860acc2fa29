"""One validator on one run: its own checkout of etalon + patch, in a folder of its own.

The validator never sees the clone the agent worked in (editing a validator must not rerun an
agent run), nor another validator's output, nor anything that names the cell: its folder has a
random name per attempt, under the workflow's work folder, and its context, transcript and patch
are its own copies, so that it scores the run blind to its cell (docs/validators.md). A run
whose agent run failed is not scored.
"""

from __future__ import annotations

import json
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from agentab.budget import NOT_STARTED
from agentab.etalon import checkout_with_patch
from agentab.files import results_secret, write_sealed_json
from agentab.layout import RunFolder
from agentab.run.frozen_inputs import inputs_view, validator_inputs
from agentab.run.process import end_stale_twin
from agentab.run.setup import run_setup
from agentab.validators import RUNS_RUN_CODE, JudgeSettings, invalid_output, prepare_job
from agentab.validators.context import build_context


@dataclass(frozen=True)
class ValidationFiles:
    """What the workflow rule hands the validate step."""

    record: Path
    transcript: Path
    patch: Path
    output: Path
    audit: Path
    lock: Path
    secret: Path


def validate_run(
    scenario,
    cell,
    spec,
    files: ValidationFiles,
    *,
    work_root: Path,
    mirrors_dir: Path,
    settings: JudgeSettings,
    confinement: str = "bwrap",
) -> dict:
    """Score one run with one validator; write its output (ok, or invalid with the reason)."""
    # A validator left running by a killed workflow is ended before this attempt starts.
    end_stale_twin(files.lock)
    secret = results_secret(files.secret)
    record = json.loads(files.record.read_text(encoding="utf-8"))
    status = (record.get("outcome") or {}).get("status")
    if status in ("failed", NOT_STARTED):
        why = "the agent's run failed" if status == "failed" else "the run was not started"
        output = invalid_output(spec.name, spec.mode, f"not scored: {why}")
        write_sealed_json(output, files.output, secret)
        return output
    context = build_context(record, files.patch.read_bytes(), cell.prompt, secret)
    scratch = work_root.absolute() / secrets.token_hex(10)
    location, tag = scenario.etalon.location, scenario.etalon_for(cell).tag
    task = scenario.task_of(cell)
    protect = scenario.protect + validator_protect(spec, task)

    def set_up(checkout: Path) -> None:
        # On the etalon as tagged, before the run's patch: nothing the agent wrote ever runs
        # with the network and the caller's package-manager configuration, and the validator
        # scores the run's code in the etalon's environment, as the agent worked in it.
        state, log = work_root.absolute().parent, files.audit / "setup.log"
        run_setup(
            scenario.etalon, checkout, log, state / "cache", files.lock, confinement,
            environments=state / "environments", list_packages=False,
        )  # fmt: skip

    try:
        job = prepare_job(
            spec,
            scenario_dir=scenario.dir,
            context=context,
            files={"transcript": files.transcript, "patch": files.patch},
            scratch_dir=scratch,
            audit_dir=files.audit,
            checkout=lambda workdir, patch: checkout_with_patch(
                location,
                tag,
                patch,
                workdir,
                mirrors_dir.absolute(),
                before_patch=set_up,
                protect=protect,
                touched=context["changed_files"],
            ),  # fmt: skip
            settings=settings,
            lock_path=files.lock,
            confinement=confinement,
        )
        # Its rubric, schema, policy or script folder: the frozen copies, laid out as the
        # scenario names them, in its own folder (no sandbox sees it).
        inputs = validator_inputs(scenario, spec)
        store = RunFolder(files.record.parent).results.inputs
        job.scenario_dir = inputs_view(inputs, store, scratch / "frozen")
        if spec.mode in RUNS_RUN_CODE:  # a judge gets no checkout
            job.path = scenario.etalon.path
            job.limits = scenario.limits
        output = run_validator(job, task)
        output["inputs"] = [item.as_dict() for item in inputs]  # the hashes it used
        if job.restored is not None and (job.restored.restored or job.restored.removed):
            # What the validator scored is etalon + patch with the tests given back: say so.
            output["protected"] = {
                "restored": job.restored.restored,
                "removed": job.restored.removed,
            }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if files.audit.exists() and not any(files.audit.iterdir()):
        files.audit.rmdir()
    write_sealed_json(output, files.output, secret)
    return output


def validator_protect(spec, task) -> tuple[str, ...]:
    """What a validator's checkout gets back as tagged beyond the scenario's `protect`: a tests
    validator's targets (a folder with everything in it). Its hidden tests replace whatever
    stands at their paths when they are laid in."""
    if spec.mode != "tests":
        return ()
    from agentab.validators.tests_mode import targets_of

    return tuple(targets_of(spec, task))


def run_validator(job, task=None) -> dict:
    if job.spec.mode == "tests":
        from agentab.validators.tests_mode import run_tests

        return run_tests(job, task)
    if job.spec.mode == "script":
        from agentab.validators.script import run_script

        return run_script(job)
    if job.spec.mode == "judge":
        from agentab.validators.judge import run_judge

        return run_judge(job)
    raise ValueError(f"mode {job.spec.mode} has no per-run job")
