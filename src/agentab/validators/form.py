"""The form validator: what a person fills in, checked before it counts.

A form validator declares the metrics a person fills (``fills``) and the material shown
(``show``); ``agentab.validators.form_blank`` writes the blind blank form. The person copies
``forms/<validator>.blank.toml`` to ``forms/<validator>.toml`` and fills it; agentab never
writes the filled form. ``read_form_answers`` type-checks every answer, refuses a metric outside
``fills`` (and says so when another validator produces it), and leaves unanswered ids pending.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentab.errors import AgentabError, Problem, problem
from agentab.layout import ResultsFolder
from agentab.validators import validator_output
from agentab.validators.calibrating import calibrated_metric, label_problems
from agentab.validators.form_blank import (
    MATERIAL_KEY,
    MATERIAL_SUFFIX,
    MODE,
    form_spec,
    form_validators,
    formable_run_ids,
    read_json,
    read_keys,
    scenario_run_ids,
)


@dataclass
class FormAnswers:
    """What a filled form says, per run (``"SLUG/rNN"``), and what it does not say yet."""

    validator: str
    form_path: Path
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending: dict[str, list[str]] = field(default_factory=dict)

    def output_for(self, run_id: str) -> dict | None:
        """The run's validator output, once the form answers at least one metric of it."""
        if run_id not in self.answers:
            return None
        return validator_output(self.validator, MODE, self.answers[run_id])


# --- the spec checks ----------------------------------------------------------------------------


def form_spec_problems(scenario: Any) -> list[Problem]:
    """Problems in the forms' own options: ``fills`` and ``show``."""
    problems = []
    for name in form_validators(scenario):
        options = scenario.validators[name].options
        fills = options.get("fills")
        if not isinstance(fills, list) or not fills or not all(isinstance(m, str) for m in fills):
            problems.append(
                problem(
                    scenario.path,
                    f"validators.{name}.fills",
                    "a form must fill at least one metric",
                    fix='write fills = ["readable"] with the metrics a person fills',
                )
            )
        elif MATERIAL_KEY in fills:
            problems.append(
                problem(
                    scenario.path,
                    f"validators.{name}.fills",
                    f"`{MATERIAL_KEY}` is the form's own key and cannot be a metric",
                    fix="give the metric another name",
                )
            )
        for shown in options.get("show", []):
            if shown not in MATERIAL_SUFFIX:
                problems.append(
                    problem(
                        scenario.path,
                        f"validators.{name}.show",
                        f"a form cannot show {shown!r}",
                        fix=f"use some of: {', '.join(MATERIAL_SUFFIX)}",
                    )
                )
    return problems


def form_fill_conflicts(scenario: Any) -> list[Problem]:
    """The load-time rule: a form may not fill a metric another validator declares.

    A judge declares its metrics in its schema; a script's are known only from its output,
    which ``read_form_answers`` checks.
    """
    from agentab.validators.judge import judge_declared_metrics

    declared: dict[str, str] = {}
    for name, spec in scenario.validators.items():
        if spec.mode == "judge":
            try:
                metrics = judge_declared_metrics(scenario.dir, spec)
            except AgentabError:
                continue  # the judge's own check reports an unreadable schema
            for metric in metrics:
                declared.setdefault(metric, name)
    problems = []
    for name in form_validators(scenario):
        for metric in scenario.validators[name].options.get("fills", []):
            if metric in declared:
                problems.append(
                    problem(
                        scenario.path,
                        f"validators.{name}.fills",
                        f"form {name!r} fills {metric!r}, which validator "
                        f"{declared[metric]!r} produces",
                        fix=f"remove {metric!r} from fills: a form may fill only a metric "
                        "nothing else produces",
                    )
                )
    return problems


# --- reading the filled form ------------------------------------------------------------------


def read_form_answers(results_dir: Path, scenario: Any, validator_name: str) -> FormAnswers:
    """The answers of ``forms/<validator>.toml``; every run without an answer is pending.

    Raises an AgentabError naming the form, the id and the fix for an answer of the wrong
    type, a metric outside ``fills`` (or produced by another validator), or an unknown id.
    """
    results_dir = Path(results_dir)
    spec = form_spec(scenario, validator_name)
    fills = list(spec.options.get("fills", []))
    folder = ResultsFolder(Path(results_dir))
    form = folder.filled_form(validator_name)
    keys = read_keys(results_dir, validator_name) or {"runs": {}}
    result = FormAnswers(validator=validator_name, form_path=form)
    if form.is_file():
        if not keys["runs"]:
            raise AgentabError(
                problem(
                    form,
                    "",
                    f"the form's id -> run mapping is missing ({folder.form_keys(validator_name)})",
                    fix="the ids cannot be traced to runs without it; restore it from a "
                    "backup, or write a new blank form and fill that one",
                )
            )
        producers = _metric_producers(results_dir, scenario, validator_name)
        result.answers = _checked_answers(form, keys["runs"], fills, producers)
        if calibrated_metric(spec) and (
            found := label_problems(form, spec, keys["runs"], result.answers)
        ):
            raise AgentabError(found)
    listed = set(keys["runs"].values())
    if not calibrated_metric(spec):  # a calibrating form asks for its sample alone
        listed |= set(formable_run_ids(results_dir, scenario))
    for run_id in sorted(listed):
        missing = [m for m in fills if m not in result.answers.get(run_id, {})]
        if missing:
            result.pending[run_id] = missing
    return result


def _metric_producers(results_dir: Path, scenario: Any, form_name: str) -> dict[str, str]:
    """Metric -> the other validator that produces it (a judge's schema, a script's output)."""
    from agentab.validators.judge import judge_declared_metrics

    producers: dict[str, str] = {}
    others = {n: s for n, s in scenario.validators.items() if n != form_name}
    for name, spec in others.items():
        if spec.mode == "judge":
            try:
                for metric in judge_declared_metrics(scenario.dir, spec):
                    producers.setdefault(metric, name)
            except AgentabError:
                pass
    results = ResultsFolder(Path(results_dir))
    for run in scenario_run_ids(results_dir, scenario):
        for name in others:
            output = read_json(results.run_by_id(run).validator_output(name))
            if isinstance(output, dict) and isinstance(output.get("metrics"), dict):
                for metric in output["metrics"]:
                    producers.setdefault(metric, name)
    return producers


def _checked_answers(
    form: Path, runs_by_id: dict[str, str], fills: list[str], producers: dict[str, str]
) -> dict[str, dict[str, Any]]:
    try:
        data = tomllib.loads(form.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise AgentabError(
            problem(
                form,
                "",
                f"is not valid TOML: {error}",
                fix='correct the line named; an answer is true/false, a number or "text"',
            )
        ) from None
    problems: list[Problem] = []
    for key in data:
        if key != "runs":
            problems.append(
                problem(
                    form,
                    key,
                    "unexpected top-level key",
                    fix='answers go under [runs."<id>"] tables',
                )
            )
    answers: dict[str, dict[str, Any]] = {}
    kinds: dict[str, tuple[str, str]] = {}  # metric -> (kind, the first id that set it)
    for form_id, table in (data.get("runs") or {}).items():
        where = f'runs."{form_id}"'
        if form_id not in runs_by_id:
            problems.append(
                problem(
                    form,
                    where,
                    f"unknown id {form_id!r}",
                    fix="copy the ids from the blank form; do not edit them",
                )
            )
            continue
        if not isinstance(table, dict):
            problems.append(
                problem(
                    form,
                    where,
                    "must be a table of answers",
                    fix=f'write [runs."{form_id}"] and answers below it',
                )
            )
            continue
        run_answers = {}
        for metric, value in table.items():
            if metric == MATERIAL_KEY and metric not in fills:
                continue
            found = _answer_problem(form, where, form_id, metric, value, fills, producers, kinds)
            if found:
                problems.append(found)
            else:
                run_answers[metric] = value
        if run_answers:
            answers[runs_by_id[form_id]] = run_answers
    if problems:
        raise AgentabError(problems)
    return answers


def _answer_problem(
    form: Path,
    where: str,
    form_id: str,
    metric: str,
    value: Any,
    fills: list[str],
    producers: dict[str, str],
    kinds: dict[str, tuple[str, str]],
) -> Problem | None:
    key = f"{where}.{metric}"
    if metric in producers:
        # Even a metric the form declares it fills: a script may return it at run time, and
        # a form never overwrites a measured value (checked here, not discovered later).
        return problem(
            form,
            key,
            f"id {form_id}: {metric!r} is produced by validator {producers[metric]!r}; "
            "a form may not overwrite a measured metric",
            fix=f"remove {metric} from this form"
            + (" and from the validator's fills" if metric in fills else ""),
        )
    if metric not in fills:
        return problem(
            form,
            key,
            f"id {form_id}: {metric!r} is not a metric this form fills",
            fix=f"answer only {', '.join(fills)} (the validator's fills)",
        )
    kind = _answer_kind(value)
    if kind is None:
        return problem(
            form,
            key,
            f"id {form_id}: {value!r} is a {type(value).__name__}; an answer is a single value",
            fix='write true or false, a number, or a "text" in quotes',
        )
    first = kinds.setdefault(metric, (kind, form_id))
    if first[0] != kind:
        return problem(
            form,
            key,
            f"id {form_id}: {metric} is a {kind} here but a {first[0]} for id {first[1]}",
            fix=f"answer {metric} the same way for every run (its type decides how it aggregates)",
        )
    return None


def _answer_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return None
