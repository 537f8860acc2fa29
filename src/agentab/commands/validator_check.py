"""`agentab check --validators`: each script and tests validator tried once on the etalon as
tagged, before a run is paid for.

A validator that prints something other than `{"metrics": {...}}`, exits non-zero, or leaves a
contract metric unreturned makes every run of the experiment invalid, and the workflow finds
out only after the agents have run. Here each one runs as it would on a run that changed
nothing: its own checkout of the tag (the etalon's setup run in it first), an empty patch, an
empty transcript, a context with no agent run, in its sandbox under the scenario's limits. The
etalon as tagged is a result a validator must be able to score (an agent may change nothing).

Judges are not tried (each call costs a model's tokens); their metrics come from their verdict
schemas, checked when the scenario loads. Forms are filled by people.
"""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path

from agentab.confinement.bwrap import require_sandbox
from agentab.errors import Problem, problem
from agentab.etalon import checkout_with_patch
from agentab.run.setup import run_setup
from agentab.run.workspace import claim
from agentab.scenario import Scenario
from agentab.scenario.source import Collector
from agentab.scenario.validation import judge_metrics, tests_metrics
from agentab.synthesis.runs.builtin import BUILTIN_METRICS
from agentab.validators import JudgeSettings, prepare_job
from agentab.validators.context import build_context
from agentab.validators.validation import run_validator, validator_protect

TRIED_MODES = ("script", "tests")
CONTRACT_DOC = "docs/validators.md#what-every-validator-returns"
NO_RUN_SECRET = "agentab-check-validators"


def try_validators(
    scenario: Scenario, state: Path, confinement: str = "bwrap"
) -> tuple[list[str], list[Problem]]:
    """Each script and tests validator run on the etalon as tagged: a line per validator that
    kept the contract, and a problem per one that did not (or per contract metric none of
    them, nor a judge, form or built-in, returns)."""
    lines: list[str] = []
    problems: list[Problem] = []
    returned: set[str] = set()
    tried = [spec for spec in scenario.validators.values() if spec.mode in TRIED_MODES]
    if tried:  # a sandbox that cannot start is this machine's problem, not a validator's
        require_sandbox(confinement)
    folder = (state / "work").absolute() / secrets.token_hex(10)
    claim(folder)  # killed, its folder is removed at the workflow's next start
    try:
        for spec in tried:
            output = try_one(scenario, spec, state, folder / spec.name, confinement)
            if output.get("ok"):
                metrics = sorted(output.get("metrics") or {})
                returned |= set(metrics)
                shown = json.dumps(output.get("metrics"), ensure_ascii=False)
                lines.append(
                    f"validator   {spec.name} ({spec.mode}) on {scenario.etalon.tag}, no agent "
                    f"run: {shown[:200]}"
                )
            else:
                problems.append(broken(scenario, spec, str(output.get("problem"))))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if tried and not problems:
        problems += unreturned(scenario, returned, [spec.name for spec in tried])
    return lines, problems


def try_one(scenario: Scenario, spec, state: Path, folder: Path, confinement: str) -> dict:
    """One validator's output on the etalon as tagged, as the validate step would make it."""
    folder.mkdir(parents=True)
    patch, transcript = folder / "result.patch", folder / "transcript.jsonl"
    patch.write_bytes(b"")
    transcript.write_text("")
    cell = scenario.run_cells[0]  # with tasks, the first task's: its tag and its tests
    etalon, tag, task = scenario.etalon, scenario.etalon_for(cell).tag, scenario.task_of(cell)
    record = {
        "scenario": scenario.name,
        "slug": cell.slug,
        "rep": 0,
        "etalon": {"repo": etalon.repo, "tag": tag},
        "outcome": {"status": "completed", "reason": None},
        "facts": {"final_message": ""},
        "patch": {"files": []},
    }
    context = build_context(record, b"", cell.prompt, NO_RUN_SECRET)
    protect = scenario.protect + validator_protect(spec, task)

    def set_up(checkout: Path) -> None:
        run_setup(
            etalon, checkout, folder / "setup.log", (state / "cache").absolute(),
            folder / "lock", confinement, environments=(state / "environments").absolute(),
            list_packages=False,
        )  # fmt: skip

    job = prepare_job(
        spec,
        scenario_dir=scenario.dir,
        context=context,
        files={"transcript": transcript, "patch": patch},
        scratch_dir=folder / "scratch",
        audit_dir=folder / "audit",
        checkout=lambda workdir, given: checkout_with_patch(
            etalon.location,
            tag,
            given,
            workdir,
            (state / "mirrors").absolute(),
            before_patch=set_up,
            protect=protect,
            touched=[],
        ),  # fmt: skip
        settings=JudgeSettings(),
        lock_path=folder / "lock",
        confinement=confinement,
    )
    job.path = etalon.path
    job.limits = scenario.limits
    return run_validator(job, task)


def script_file(spec) -> str:
    run = spec.options.get("run") or []
    return str(run[0]) if run else ""


def broken(scenario: Scenario, spec, reason: str) -> Problem:
    where = f" ({script_file(spec)})" if spec.mode == "script" else ""
    reason = reason.replace(f"the output of {script_file(spec)}", "its output")
    return problem(
        scenario.path,
        f"validators.{spec.name}",
        f"validator `{spec.name}`{where}, run on the etalon as tagged ({scenario.etalon.tag}) "
        f"with no agent run, broke the contract: {reason}. Every run of the experiment would "
        "be invalid the same way",
        f'make it exit 0 and print one JSON object {{"metrics": {{...}}}} on stdout, whatever '
        f"the run did ({CONTRACT_DOC})",
        Collector(scenario.path, scenario.path.read_text(encoding="utf-8")).line_of(
            f"validators.{spec.name}"
        ),
    )


def unreturned(scenario: Scenario, returned: set[str], tried: list[str]) -> list[Problem]:
    """The contract metrics no validator would fill: not returned by those tried, nor a judge's
    schema, a form, or a built-in."""
    others: set[str] = set(BUILTIN_METRICS)
    sink = Collector(scenario.path, "")
    for name, spec in scenario.validators.items():
        if spec.mode == "judge":
            others |= judge_metrics(spec.options, scenario.dir, f"validators.{name}", sink, True)
        elif spec.mode == "form":
            others |= set(spec.options.get("fills") or [])
        elif spec.mode == "tests":
            others |= set(tests_metrics(spec.options, scenario.raw))
    missing = [m for m in scenario.metrics if m not in returned and m not in others]
    if not missing:
        return []
    names = ", ".join(f"`{m}`" for m in missing)
    return [
        problem(
            scenario.path,
            "validation.metrics",
            f"no validator returned {names} on the etalon as tagged (tried: "
            f"{', '.join(tried)}); no judge, form or built-in fills it: every run would be "
            "invalid for it",
            f"return it from a validator's metrics, or take it out of [validation] metrics "
            f"({CONTRACT_DOC})",
        )
    ]
