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

from agentab.errors import AgentabError, problem

# The SDK's own retries are switched off (we retry ourselves and keep every attempt for audit);
# these bound ours. A config file may change them, a scenario never needs to.
DEFAULT_JUDGE_BASE_URL = "https://api.anthropic.com"
DEFAULT_JUDGE_TIMEOUT_S = 120.0
DEFAULT_JUDGE_ATTEMPTS = 5
DEFAULT_JUDGE_BACKOFF_S = 2.0
DEFAULT_JUDGE_BACKOFF_MAX_S = 60.0

# Verdict fields that explain a judge's answer rather than score the run: never metrics.
REASON_FIELDS = ("reason", "reasons")

# Context fields that carry a file path: a validator gets its own copy of each, so that no path
# it is handed leads into the run folder where its siblings write their outputs.
CONTEXT_FILE_FIELDS = ("patch", "transcript")


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


def judge_settings_from_config(
    config: Mapping[str, Any], base_dir: Path, config_file: str = "config/config.yaml"
) -> JudgeSettings:
    """Read the judge keys of a workflow config; a relative credentials path is from base_dir."""
    values: dict[str, Any] = {}
    for key, attribute in CONFIG_KEYS.items():
        if config.get(key) is None:
            continue
        values[attribute] = _checked_config_value(config_file, key, config[key])
    if "credentials_file" in values:
        values["credentials_file"] = (base_dir / values["credentials_file"]).resolve()
    return JudgeSettings(**values)


def _checked_config_value(config_file: str, key: str, value: Any) -> Any:
    if key in ("credentials", "judge_base_url"):
        if not isinstance(value, str) or not value:
            raise AgentabError(
                problem(
                    config_file,
                    key,
                    f"must be a non-empty string, not {value!r}",
                    fix=f"set {key} to a path or URL in quotes",
                )
            )
        return value
    if key == "judge_max_attempts":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise AgentabError(
                problem(
                    config_file,
                    key,
                    f"must be an integer >= 1, not {value!r}",
                    fix=f"set {key} = 5 (or remove it for the default)",
                )
            )
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise AgentabError(
            problem(
                config_file,
                key,
                f"must be a number of seconds >= 0, not {value!r}",
                fix=f"set {key} to a number such as 2",
            )
        )
    return float(value)


@dataclass
class ValidatorJob:
    """Everything one validator gets for one run, and nothing about the other validators."""

    spec: Any  # the scenario's ValidatorSpec: .name, .mode, .options
    scenario_dir: Path  # rubric_file, schema_file and script paths are relative to it
    context_path: Path  # this validator's own copy of the context file
    workdir: Path  # its own checkout of etalon + patch
    audit_dir: Path  # where a validator keeps what it sent and received, for audit
    settings: JudgeSettings = field(default_factory=JudgeSettings)

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


Checkout = Callable[[Path, Path], None]
"""Makes a fresh checkout of etalon + patch: ``checkout(workdir, patch_path)``."""


def prepare_job(
    spec: Any,
    *,
    scenario_dir: Path,
    context_path: Path,
    scratch_dir: Path,
    checkout: Checkout,
    settings: JudgeSettings | None = None,
) -> ValidatorJob:
    """Give one validator its own folder: a checkout, a context copy, and an audit folder.

    ``scratch_dir`` must be private to this validator and this run (it is emptied first: a
    retried job must not see what a failed attempt left). The context copy points at copies
    of the patch and the stream inside it, and its ``workdir`` at the new checkout, so nothing
    a validator is handed leads to the run folder or to a sibling's scratch folder.
    """
    if scratch_dir.exists():
        shutil.rmtree(scratch_dir)
    inputs = scratch_dir / "inputs"
    workdir = scratch_dir / "workdir"
    audit_dir = scratch_dir / "audit"
    for folder in (inputs, audit_dir):
        folder.mkdir(parents=True)
    context = json.loads(Path(context_path).read_text(encoding="utf-8"))
    for key in CONTEXT_FILE_FIELDS:
        if context.get(key):
            source = Path(context[key])
            copy = inputs / source.name
            if source.exists():
                shutil.copyfile(source, copy)
            context[key] = str(copy)
    checkout(workdir, Path(context["patch"]))
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
    )
