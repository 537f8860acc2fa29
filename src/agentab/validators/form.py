"""The form: a blind, shuffled TOML file in which a person fills metrics nothing else produces.

``write_blank_form`` lists every valid run under an opaque id, in a seeded shuffled order, with
the material named by ``show`` copied beside it under the same ids. Neither the form nor its
material names a cell, a delta, a slug or a results path: a person who knows which
configuration produced a diff is no longer a blind rater. The id -> run mapping is kept
outside the forms folder, in ``results/<name>/.form-keys/<validator>.json``.

The person copies ``forms/<validator>.blank.toml`` to ``forms/<validator>.toml`` and fills it.
agentab never writes ``forms/<validator>.toml``. ``read_form_answers`` type-checks every answer,
refuses a metric outside ``fills`` (and says so when another validator produces it), and leaves
unanswered ids pending.
"""

from __future__ import annotations

import hashlib
import json
import random
import secrets
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentab.errors import AgentabError, Problem, problem
from agentab.validators import validator_output

MODE = "form"
KEYS_DIR = ".form-keys"
FORMS_DIR = "forms"
# Material a form may show, and the file suffix it gets. The stream is deliberately absent:
# raw events carry the clone's paths and the harness's system prompt, which name the cell.
MATERIAL_SUFFIX = {
    "diff": ".diff",
    "final_message": ".final_message.md",
    "task_prompt": ".task_prompt.md",
    "changed_files": ".changed_files.txt",
}
MATERIAL_KEY = "material"
ID_LENGTH = 8


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


# --- paths ------------------------------------------------------------------------------------


def blank_form_path(results_dir: Path, validator_name: str) -> Path:
    return Path(results_dir) / FORMS_DIR / f"{validator_name}.blank.toml"


def filled_form_path(results_dir: Path, validator_name: str) -> Path:
    return Path(results_dir) / FORMS_DIR / f"{validator_name}.toml"


def material_dir(results_dir: Path, validator_name: str) -> Path:
    return Path(results_dir) / FORMS_DIR / f"{validator_name}.material"


def keys_path(results_dir: Path, validator_name: str) -> Path:
    return Path(results_dir) / KEYS_DIR / f"{validator_name}.json"


def checked_answers_path(results_dir: Path, validator_name: str) -> Path:
    """The filled form's answers once ingested (checked once, read by every measure job)."""
    return Path(results_dir) / KEYS_DIR / f"{validator_name}.answers.json"


def run_dir(results_dir: Path, run_id: str) -> Path:
    slug, rep = run_id.split("/")
    return Path(results_dir) / "runs" / slug / rep


# --- the scenario's declaration -----------------------------------------------------------------


def form_spec(scenario: Any, validator_name: str) -> Any:
    spec = scenario.validators.get(validator_name)
    if spec is None or spec.mode != MODE:
        forms = [name for name, s in scenario.validators.items() if s.mode == MODE]
        raise AgentabError(
            problem(
                scenario.path,
                f"validators.{validator_name}",
                f"scenario {scenario.name!r} has no form validator named {validator_name!r}",
                fix=f"use one of: {', '.join(forms)}" if forms else 'declare mode = "form"',
            )
        )
    return spec


def form_validators(scenario: Any) -> list[str]:
    return [name for name, spec in scenario.validators.items() if spec.mode == MODE]


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


# --- which runs a form lists ------------------------------------------------------------------


def scenario_run_ids(results_dir: Path, scenario: Any) -> list[str]:
    """Every run folder of the scenario's cells that exists, as ``"SLUG/rNN"``."""
    runs = []
    for cell in scenario.cells:
        cell_dir = Path(results_dir) / "runs" / cell.slug
        if not cell_dir.is_dir():
            continue
        for rep in sorted(cell_dir.iterdir()):
            if rep.is_dir() and rep.name[:1] == "r" and rep.name[1:].isdigit():
                runs.append(f"{cell.slug}/{rep.name}")
    return runs


def formable_run_ids(results_dir: Path, scenario: Any) -> list[str]:
    """Runs the other validators scored: a form rates only runs whose measures will count.

    Read from the validators' outputs rather than measures.json, whose status may wait on
    this very form; a run that ended as an outcome (``failed``) is never listed.
    """
    others = [name for name, spec in scenario.validators.items() if spec.mode != MODE]
    eligible = []
    for run_id in scenario_run_ids(results_dir, scenario):
        folder = run_dir(results_dir, run_id)
        if not (folder / "result.patch").is_file() or _run_failed(folder):
            continue
        if all(_validator_ok(folder, name) for name in others):
            eligible.append(run_id)
    return eligible


def _run_failed(folder: Path) -> bool:
    measures = _read_json(folder / "measures.json")
    return isinstance(measures, dict) and measures.get("status") == "failed"


def _validator_ok(folder: Path, name: str) -> bool:
    output = _read_json(folder / "validators" / f"{name}.json")
    return isinstance(output, dict) and output.get("ok") is True


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# --- the blank form ---------------------------------------------------------------------------


def write_blank_form(
    results_dir: Path, scenario: Any, validator_name: str, seed: int | None = None
) -> Path:
    """Write ``forms/<validator>.blank.toml`` and its material; never the filled form.

    The seed decides the ids and the order. It is kept with the id -> run mapping, so a form
    written again (more runs done) keeps every id a person may already have answered. Without
    a seed and without a mapping, a fresh random one is drawn: the ids must not be computable
    from the run names by anyone who reads this code.
    """
    results_dir = Path(results_dir)
    spec = form_spec(scenario, validator_name)
    blank = blank_form_path(results_dir, validator_name)
    _refuse_to_overwrite_answers(blank, validator_name)
    keys = _read_keys(results_dir, validator_name)
    if keys is None:
        keys = {"seed": secrets.randbits(62) if seed is None else seed, "runs": {}}
    runs = formable_run_ids(results_dir, scenario)
    ids = _assign_ids(keys, runs)
    order = _shuffled(sorted(runs), keys["seed"])
    shows = list(spec.options.get("show", []))
    _write_material(results_dir, validator_name, {ids[r]: r for r in order}, shows)
    blank.parent.mkdir(parents=True, exist_ok=True)
    blank.write_text(
        _blank_text(scenario, validator_name, spec, [ids[r] for r in order]), encoding="utf-8"
    )
    _write_keys(results_dir, validator_name, keys)
    return blank


def _refuse_to_overwrite_answers(blank: Path, validator_name: str) -> None:
    if not blank.is_file():
        return
    try:
        data = tomllib.loads(blank.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError:
        data = {}
    runs = data.get("runs", {}) if isinstance(data.get("runs"), dict) else {}
    answered = [i for i, a in runs.items() if isinstance(a, dict) and set(a) - {MATERIAL_KEY}]
    if answered:
        raise AgentabError(
            problem(
                blank,
                "runs",
                f"the blank form holds answers ({len(answered)} runs), and agentab rewrites it",
                fix=f"move it to {blank.with_name(f'{validator_name}.toml')} (the filled form, "
                "which agentab never writes), then run this again",
            )
        )


def _read_keys(results_dir: Path, validator_name: str) -> dict | None:
    keys = _read_json(keys_path(results_dir, validator_name))
    if isinstance(keys, dict) and isinstance(keys.get("runs"), dict) and "seed" in keys:
        return keys
    return None


def _write_keys(results_dir: Path, validator_name: str, keys: dict) -> None:
    path = keys_path(results_dir, validator_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(keys, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _assign_ids(keys: dict, runs: list[str]) -> dict[str, str]:
    """Run -> id: kept ids stay; a new run gets an id keyed on the seed, unique in the form."""
    by_run = {run: id_ for id_, run in keys["runs"].items()}
    for run in runs:
        if run in by_run:
            continue
        digest = hashlib.sha256(f"{keys['seed']}:{run}".encode()).hexdigest()
        length = ID_LENGTH
        while digest[:length] in keys["runs"]:
            length += 1
        keys["runs"][digest[:length]] = run
        by_run[run] = digest[:length]
    return by_run


def _shuffled(items: list[str], seed: int) -> list[str]:
    shuffled = list(items)
    random.Random(seed).shuffle(shuffled)
    return shuffled


def _write_material(results_dir: Path, validator_name: str, runs: dict[str, str], shows: list[str]):
    folder = material_dir(results_dir, validator_name)
    if folder.exists():
        shutil.rmtree(folder)  # ours alone: stale ids must not stay beside the new form
    folder.mkdir(parents=True)
    for form_id, run_id in runs.items():
        source = run_dir(results_dir, run_id)
        context = _read_json(source / "context.json") or {}
        for shown in shows:
            target = folder / f"{form_id}{MATERIAL_SUFFIX[shown]}"
            if shown == "diff":
                shutil.copyfile(source / "result.patch", target)
            elif shown == "changed_files":
                target.write_text("".join(f"{f}\n" for f in context.get(shown) or []), "utf-8")
            else:
                target.write_text(str(context.get(shown) or "(not recorded)") + "\n", "utf-8")


def _blank_text(scenario: Any, validator_name: str, spec: Any, ids: list[str]) -> str:
    fills = list(spec.options.get("fills", []))
    shows = list(spec.options.get("show", []))
    lines = [
        f'# Blind form of validator "{validator_name}" (scenario "{scenario.name}").',
        "#",
        f"# To fill it, copy this file to {validator_name}.toml in this folder. For each run",
        f"# below, read its material in {validator_name}.material/, then replace each",
        '# commented line by an answer: true or false, a number, or a "text" in quotes.',
        "# Answer a metric the same way for every run. A run left unanswered stays pending.",
        f"# agentab rewrites this file when runs are added; it never writes {validator_name}.toml.",
        "",
    ]
    for form_id in ids:
        material = [f"{validator_name}.material/{form_id}{MATERIAL_SUFFIX[s]}" for s in shows]
        lines.append(f'[runs."{form_id}"]')
        lines.append(f"{MATERIAL_KEY} = {json.dumps(material)}")
        lines.extend(f"# {metric} = " for metric in fills)
        lines.append("")
    return "\n".join(lines)


# --- reading the filled form ------------------------------------------------------------------


def read_form_answers(results_dir: Path, scenario: Any, validator_name: str) -> FormAnswers:
    """The answers of ``forms/<validator>.toml``; every run without an answer is pending.

    Raises an AgentabError naming the form, the id and the fix for an answer of the wrong
    type, a metric outside ``fills`` (or produced by another validator), or an unknown id.
    """
    results_dir = Path(results_dir)
    spec = form_spec(scenario, validator_name)
    fills = list(spec.options.get("fills", []))
    form = filled_form_path(results_dir, validator_name)
    keys = _read_keys(results_dir, validator_name) or {"runs": {}}
    result = FormAnswers(validator=validator_name, form_path=form)
    if form.is_file():
        if not keys["runs"]:
            raise AgentabError(
                problem(
                    form,
                    "",
                    "the form's id -> run mapping is missing "
                    f"({keys_path(results_dir, validator_name)})",
                    fix="the ids cannot be traced to runs without it; restore it from a "
                    "backup, or write a new blank form and fill that one",
                )
            )
        producers = _metric_producers(results_dir, scenario, validator_name)
        result.answers = _checked_answers(form, keys["runs"], fills, producers)
    listed = set(keys["runs"].values()) | set(formable_run_ids(results_dir, scenario))
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
    for run_id in scenario_run_ids(results_dir, scenario):
        for name in others:
            output = _read_json(run_dir(results_dir, run_id) / "validators" / f"{name}.json")
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
    if metric not in fills:
        if metric in producers:
            return problem(
                form,
                key,
                f"id {form_id}: {metric!r} is produced by validator {producers[metric]!r}; "
                "a form may not overwrite a measured metric",
                fix=f"remove {metric} from this form",
            )
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
