"""A form that checks a judge against people (`calibrates`, `sample`): which runs it lists, and
the question it asks.

It lists a seeded sample of the runs the other validators scored, spread evenly over the run
cells (each cell, and each task), so that every cell's judge rate can be corrected with labels of
its own (`synthesis.judge_agreement`). Within a run cell, the runs are taken in the order of a
digest of the form's seed and the run: a uniform random subset, which is what makes the
corrected rate unbiased. A run once listed stays listed (a person may have answered it), so a
form written again after more runs keeps its sample and only tops it up.

The person answers the judge's question (its rubric, and its schema's words for the metric),
blind as every form: the judge's own answers are never shown.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from agentab.errors import Problem, problem
from agentab.layout import ResultsFolder

CALIBRATES = "calibrates"
SAMPLE = "sample"
QUESTION_FILE = "question.md"


def calibrated_metric(spec: Any) -> str | None:
    """The judge's metric a form checks, or None for an ordinary form."""
    return spec.options.get(CALIBRATES)


def calibrating_forms(scenario: Any) -> dict[str, Any]:
    """Form name -> spec, for the forms that check a judge."""
    return {
        name: spec
        for name, spec in scenario.validators.items()
        if spec.mode == "form" and calibrated_metric(spec)
    }


# --- which runs it lists ------------------------------------------------------------------------


def run_cell_of(run: str) -> str:
    """`rule-off--hard/r03` -> `rule-off--hard`: the cell and task a run belongs to."""
    return run.partition("/")[0]


def calibration_sample(keys: dict, eligible: list[str], size: int) -> list[str]:
    """The runs a calibrating form lists: those listed before, topped up to `size` over the run
    cells as evenly as their runs allow."""
    listed = set(keys["runs"].values())
    by_cell: dict[str, list[str]] = defaultdict(list)
    for run in sorted(eligible):
        by_cell[run_cell_of(run)].append(run)
    quota = spread(size, {cell: len(runs) for cell, runs in by_cell.items()}, keys["seed"])
    chosen = []
    for cell, runs in by_cell.items():
        kept = [run for run in runs if run in listed]
        fresh = sorted((run for run in runs if run not in listed), key=lambda r: _rank(keys, r))
        chosen += kept + fresh[: max(0, quota[cell] - len(kept))]
    return sorted(chosen)


def spread(size: int, available: dict[str, int], seed: int) -> dict[str, int]:
    """`size` labels dealt one at a time to each run cell in turn (a seeded order, so that no
    cell is always the one left short), never more than a cell has runs."""
    order = sorted(available)
    random.Random(f"{seed}:cells").shuffle(order)
    quota = dict.fromkeys(order, 0)
    left = min(size, sum(available.values()))
    while left:
        for cell in order:
            if left and quota[cell] < available[cell]:
                quota[cell] += 1
                left -= 1
    return quota


def _rank(keys: dict, run: str) -> str:
    return hashlib.sha256(f"{keys['seed']}:sample:{run}".encode()).hexdigest()


# --- the question it asks -----------------------------------------------------------------------


def blank_header(spec: Any, listed: int) -> list[str]:
    """Lines the blank form of a calibrating form opens with, after the usual ones."""
    metric = spec.options["fills"][0]
    material = ResultsFolder(Path()).form_material(spec.name).name
    return [
        "#",
        f"# This form checks a judge against people: it lists {listed} runs drawn with a seed",
        f"# (sample = {spec.options.get(SAMPLE)}). For each, answer {metric} = true or false: the",
        f"# question the judge answers, in {material}/{QUESTION_FILE}. The judge's own answers",
        "# are not shown: answer from the material alone.",
    ]


def write_question(results_dir: Path, scenario: Any, spec: Any, runs: list[str]) -> Path:
    """`forms/<form>.material/question.md`: the judge's question, as its rubric and schema put
    it (their frozen copies, named by the judge's outputs of the listed runs)."""
    results = ResultsFolder(Path(results_dir))
    judged = calibrated_metric(spec)
    rubric, description = judge_question(results, scenario, judged, runs)
    text = [
        "# The judge's question",
        "",
        f"Answer `{spec.options['fills'][0]}` with true or false for each run, as the judge "
        f"answers `{judged}`" + (f": {description}" if description else "."),
        "",
        "The judge's rubric, word for word:",
        "",
        rubric or "(its frozen rubric is not in this results folder)",
        "",
    ]
    path = results.form_material(spec.name) / QUESTION_FILE
    path.write_text("\n".join(text), encoding="utf-8")
    return path


def judge_question(results: ResultsFolder, scenario: Any, metric: str, runs: list[str]):
    """(rubric text, the schema's description of the metric) of the judge that answers it."""
    judges = [name for name, spec in scenario.validators.items() if spec.mode == "judge"]
    for run in runs:
        for name in judges:
            output = _read_json(results.run_by_id(run).validator_output(name))
            if isinstance(output, dict) and metric in (output.get("metrics") or {}):
                return _frozen_question(results, output.get("inputs") or [], metric)
    return "", ""


def _frozen_question(results: ResultsFolder, inputs: list, metric: str) -> tuple[str, str]:
    found = {
        item.get("kind"): results.inputs / item["sha256"][:16] / Path(item["rel"]).name
        for item in inputs
        if isinstance(item, dict) and item.get("sha256") and item.get("rel")
    }
    rubric = _read_text(found.get("rubric"))
    schema = _read_json(found["schema"]) if "schema" in found else None
    properties = schema.get("properties") if isinstance(schema, dict) else None
    prop = properties.get(metric) if isinstance(properties, dict) else None
    return rubric.strip(), str(prop.get("description", "")) if isinstance(prop, dict) else ""


def _read_text(path: Path | None) -> str:
    try:
        return path.read_text(encoding="utf-8") if path else ""
    except OSError:
        return ""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# --- its answers --------------------------------------------------------------------------------


def label_problems(form: Path, spec: Any, ids: dict[str, str], answers: dict) -> list[Problem]:
    """A label is true or false: the judge's answer it is set against is."""
    metric = spec.options["fills"][0]
    return [
        problem(
            form,
            f'runs."{form_id}".{metric}',
            f"id {form_id}: {answers[run][metric]!r} is not true or false; the judge's "
            f"`{calibrated_metric(spec)}` is a yes/no answer, and so is its label",
            f"write {metric} = true or {metric} = false",
        )
        for form_id, run in sorted(ids.items())
        if run in answers and metric in answers[run] and not isinstance(answers[run][metric], bool)
    ]
