"""One side of a candidate, tried: its tests run on the parent, with or without the fix.

A mined task is scored by a `mode = "tests"` validator, so the miner tries a candidate the way
that validator will score a run: a fresh checkout of the parent's tag, the scenario's setup on
it, a patch (none, or the commit's fix: what a run that fixed the bug as the commit did would
hand in), the protected paths given back, the hidden tests (the commit's tests) laid in, and
agentab's own runner in the validator's sandbox, its report read as data. What the miner keeps
is what the validator will see.
"""

from __future__ import annotations

import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from agentab.etalon import checkout_with_patch
from agentab.etalon.protect import effective_protect
from agentab.harnesses.base import HarnessFault
from agentab.mining.workspace import MiningRepo
from agentab.run.setup import run_setup
from agentab.scenario.tasks import Task
from agentab.scenario.types import Etalon, ValidatorSpec
from agentab.validators import prepare_job
from agentab.validators.tests_mode import run_and_judge, targets_of


@dataclass(frozen=True)
class Settings:
    """How a candidate's tests run: the runner, the scenario's environment, the sandbox."""

    runner: str = "pytest"
    suite: tuple[str, ...] = ()  # more test files or folders whose tests must keep passing
    etalon: Etalon | None = None  # its setup, path and setup_timeout; None: no setup
    protect: tuple[str, ...] | None = None  # the scenario's `protect` (None: the default)
    timeout: str = "5m"
    limits: object = None  # the scenario's `[protocol] limits`, when it has them
    confinement: str = "bwrap"


@dataclass(frozen=True)
class Side:
    """Each test's outcome on one side, or why its tests could not run."""

    outcomes: dict[str, str]
    problem: str = ""  # the setup failed, the runner did not start, no test file
    unfinished: str = ""  # the test process crashed or timed out before the runner's end

    @property
    def built(self) -> bool:
        return not self.problem


def try_side(
    repo: MiningRepo,
    tag: str,
    hidden: str,
    tests: list[str],
    patch: Path,
    settings: Settings,
    audit: Path,
) -> Side:
    """Run `tests` (files) on the tag's checkout with `patch` applied and `hidden` (a folder of
    the output, as a scenario names it) laid in."""
    options = {"runner": settings.runner, "tests": [*tests, *settings.suite]}
    spec = ValidatorSpec("mine", "tests", options | {"timeout": settings.timeout})
    task = Task(name="mine", prompt="", tag=tag, hidden_tests=hidden)
    protect = effective_protect(list(settings.protect) if settings.protect is not None else None)
    protect += tuple(targets_of(spec, task))
    scratch = repo.work / "jobs" / secrets.token_hex(8)
    lock = repo.work / "jobs" / f"{scratch.name}.lock"

    def set_up(checkout: Path) -> None:
        if settings.etalon is not None:
            run_setup(
                settings.etalon, checkout, audit / "setup.log", repo.work / "cache", lock,
                settings.confinement, environments=repo.work / "environments",
                list_packages=False,
            )  # fmt: skip

    try:
        job = prepare_job(
            spec,
            scenario_dir=repo.out,
            context={},
            files={"patch": patch},
            scratch_dir=scratch,
            audit_dir=audit,
            checkout=lambda workdir, own_patch: checkout_with_patch(
                repo.location,
                tag,
                own_patch,
                workdir,
                repo.mirrors,
                before_patch=set_up,
                protect=protect,
            ),  # fmt: skip
            lock_path=lock,
            confinement=settings.confinement,
        )
        if settings.etalon is not None:
            job.path = settings.etalon.path
        job.limits = settings.limits
        ran = run_and_judge(job, task)
    except HarnessFault as fault:
        return Side({}, problem=str(fault))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        lock.unlink(missing_ok=True)
    if isinstance(ran, dict):
        return Side({}, problem=ran.get("problem") or "the tests could not run")
    if ran.verdict.forged:  # the commit's own code spoiled the report: no outcome to trust
        return Side({}, problem=ran.verdict.forged)
    return Side(dict(ran.verdict.outcomes), unfinished=ran.verdict.why_unfinished)
