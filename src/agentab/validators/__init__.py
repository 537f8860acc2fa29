"""Validators: what turns a finished run into named metrics.

Three modes share one output convention (``validators/<name>.json`` of a run)::

    {"validator": name, "mode": mode, "ok": bool,
     "metrics": {...}, "reasons": {...}, "problem": str | None}

``ok = false`` with a one-line ``problem`` makes the run invalid; it is never a failing grade.

Validators are independent: each gets the same context, its own checkout of etalon + patch
and its own scratch folder, and nothing that points at a sibling's output. A judge told the
script's verdict is anchored on it, and its agreement stops being an independent signal.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentab.run.workspace import claim
from agentab.scenario.durations import parse_duration
from agentab.trajectory import write_blind_trajectory
from agentab.validators.context import blind_transcript

# The SDK's own retries are switched off (we retry ourselves and keep every attempt for audit);
# these bound ours. A config file may change them, a scenario never needs to.
DEFAULT_JUDGE_BASE_URL = "https://api.anthropic.com"
DEFAULT_JUDGE_TIMEOUT_S = 120.0
DEFAULT_JUDGE_ATTEMPTS = 5
DEFAULT_JUDGE_BACKOFF_S = 2.0
DEFAULT_JUDGE_BACKOFF_MAX_S = 60.0

# The modes whose process runs the run's code (its tests): confined, under the run's limits,
# in a checkout whose protected paths are given back; and the module each mode's job lives in.
RUNS_RUN_CODE = frozenset({"script", "tests"})
MODE_MODULES = {"script": "script", "judge": "judge", "tests": "tests_mode"}

# A validator's own time limit when its scenario table sets none.
DEFAULT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class JudgeSettings:
    """How judges reach their model: where the key lives, which endpoint, how patiently.

    None of this decides what is measured (the model id and the rubric are in the scenario);
    it is operational, so it comes from ``config/config.yaml``.
    """

    credentials_file: Path | None = None
    base_url: str = DEFAULT_JUDGE_BASE_URL
    timeout_s: float = DEFAULT_JUDGE_TIMEOUT_S
    max_attempts: int = DEFAULT_JUDGE_ATTEMPTS
    backoff_s: float = DEFAULT_JUDGE_BACKOFF_S
    backoff_max_s: float = DEFAULT_JUDGE_BACKOFF_MAX_S


CONFIG_KEYS = {
    "credentials": "credentials_file",
    "judge_base_url": "base_url",
    "judge_timeout_s": "timeout_s",
    "judge_max_attempts": "max_attempts",
    "judge_backoff_s": "backoff_s",
    "judge_backoff_max_s": "backoff_max_s",
}


def judge_settings_from_config(config: Mapping[str, Any], base_dir: Path) -> JudgeSettings:
    """The judge keys of a workflow config, which `config/config.schema.yaml` has checked; a
    relative credentials path is from base_dir."""
    values = {
        attribute: config[key]
        for key, attribute in CONFIG_KEYS.items()
        if config.get(key) is not None
    }
    if "credentials_file" in values:
        values["credentials_file"] = (base_dir / values["credentials_file"]).resolve()
    for number in ("timeout_s", "backoff_s", "backoff_max_s"):
        if number in values:
            values[number] = float(values[number])
    return JudgeSettings(**values)


def validator_timeout_s(spec) -> float:
    """A validator's time limit: its own `timeout` in the scenario, else the default."""
    return parse_duration(spec.options.get("timeout", DEFAULT_TIMEOUT_S))


@dataclass
class ValidatorJob:
    """Everything one validator gets for one run, and nothing about the other validators."""

    spec: Any  # the scenario's ValidatorSpec: .name, .mode, .options
    scenario_dir: Path  # rubric_file, schema_file and script paths are relative to it
    context_path: Path  # this validator's own copy of the context file
    workdir: Path  # its own checkout of etalon + patch
    audit_dir: Path  # where a validator keeps what it sent and received, for audit
    settings: JudgeSettings = field(default_factory=JudgeSettings)
    lock_path: Path | None = None  # holds the validator's process group while it runs
    scratch_dir: Path | None = None  # this attempt's own folder: removed with a stale twin
    confinement: str = "bwrap"  # a script runs in a sandbox (agentab.confinement), unless "none"
    path: tuple[str, ...] = ()  # folders of its checkout first on its PATH (`[etalon] path`)
    limits: Any = None  # the scenario's `[protocol] limits` (a script runs the run's code)
    restored: Any = None  # the protected paths its checkout got back (`etalon.Restored`)

    @property
    def name(self) -> str:
        return self.spec.name

    def context(self) -> dict:
        return json.loads(self.context_path.read_text(encoding="utf-8"))


def validator_output(
    name: str,
    mode: str,
    metrics: Mapping[str, Any] | None = None,
    reasons: Mapping[str, str] | None = None,
) -> dict:
    """The output of a validator that scored the run."""
    return {
        "validator": name,
        "mode": mode,
        "ok": True,
        "metrics": dict(metrics or {}),
        "reasons": dict(reasons or {}),
        "problem": None,
    }


def invalid_output(name: str, mode: str, reason: str) -> dict:
    """The output of a validator that could not score the run: the run becomes invalid."""
    one_line = " ".join(reason.split())
    return {
        "validator": name,
        "mode": mode,
        "ok": False,
        "metrics": {},
        "reasons": {},
        "problem": one_line,
    }


Checkout = Callable[[Path, Path], Any]
"""Makes a fresh checkout of etalon + patch: ``checkout(workdir, patch_path)``; returns what
protected paths it gave back (an `etalon.Restored`), or None."""


def prepare_job(
    spec: Any,
    *,
    scenario_dir: Path,
    context: dict,
    files: Mapping[str, Path],
    scratch_dir: Path,
    audit_dir: Path,
    checkout: Checkout,
    settings: JudgeSettings | None = None,
    lock_path: Path | None = None,
    confinement: str = "bwrap",
) -> ValidatorJob:
    """Give one validator its own folder: a checkout, its own copies of the run's files, and
    the context file pointing at them.

    ``scratch_dir`` is private to this validator and this attempt, under an opaque name, and
    emptied first. ``files`` maps context fields (``transcript``, ``patch``) to the run's files,
    which are copied in: nothing a validator is handed leads to the run folder, to a sibling's
    output or to anything that names the cell. ``audit_dir`` (what a validator sent and
    received, kept for people) lies outside the scratch folder, out of every validator's reach.
    """
    if scratch_dir.exists():
        shutil.rmtree(scratch_dir)
    # Claimed before anything is made in it: a killed step's folder is removed at the
    # workflow's next start.
    claim(scratch_dir)
    inputs = scratch_dir / "inputs"
    workdir = scratch_dir / "workdir"
    inputs.mkdir(parents=True)
    if audit_dir.exists():
        shutil.rmtree(audit_dir)
    audit_dir.mkdir(parents=True)
    context = dict(context)
    for key, source in files.items():
        copy = inputs / Path(source).name
        if key == "transcript":
            blind_transcript(Path(source), copy)
            trajectory = inputs / "trajectory.json"
            write_blind_trajectory(copy, str(context.get("run") or ""), trajectory)
            context["trajectory"] = str(trajectory)
        else:
            shutil.copyfile(source, copy)
        context[key] = str(copy)
    # A judge reads the task, the diff and the final message (the context): it is given no
    # checkout, which would cost its job a copy of the etalon and a `git apply` for nothing.
    restored = None
    if spec.mode != "judge":
        restored = checkout(workdir, Path(context["patch"]))
        context["workdir"] = str(workdir)
    own_context = inputs / "context.json"
    own_context.write_text(json.dumps(context, indent=2, ensure_ascii=False), encoding="utf-8")
    return ValidatorJob(
        spec=spec,
        scenario_dir=Path(scenario_dir),
        context_path=own_context,
        workdir=workdir,
        audit_dir=audit_dir,
        settings=settings or JudgeSettings(),
        lock_path=lock_path or scratch_dir / "validator.lock",
        scratch_dir=scratch_dir,
        confinement=confinement,
        restored=restored,
    )
