"""The blank form: which runs a form lists, under which ids, and the material shown beside it.

``write_blank_form`` lists every valid run under an opaque id, in a seeded shuffled order, with
the material named by ``show`` copied beside it under the same ids. Neither the form nor its
material names a cell, a delta, a slug or a results path: a person who knows which
configuration produced a diff is no longer a blind rater. The id -> run mapping is kept
outside the forms folder (``ResultsFolder.form_keys``), so the person never sees it.
"""

from __future__ import annotations

import hashlib
import json
import random
import secrets
import shutil
import tomllib
from pathlib import Path
from typing import Any

from agentab.errors import AgentabError, problem
from agentab.files import shown_path
from agentab.layout import ResultsFolder, RunFolder, run_id
from agentab.validators.calibrating import (
    blank_header,
    calibrated_metric,
    calibration_sample,
    write_question,
)
from agentab.validators.context import changed_files

MODE = "form"
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


# --- which runs a form lists ------------------------------------------------------------------


def scenario_run_ids(results_dir: Path, scenario: Any) -> list[str]:
    """Every run folder of the scenario's cells that exists, as ``"SLUG/rNN"``."""
    folder = ResultsFolder(Path(results_dir))
    runs = []
    for cell in getattr(scenario, "run_cells", None) or scenario.cells:
        cell_dir = folder.cell_folder(cell.slug)
        if not cell_dir.is_dir():
            continue
        for rep in sorted(cell_dir.iterdir()):
            if rep.is_dir() and rep.name[:1] == "r" and rep.name[1:].isdigit():
                runs.append(run_id(cell.slug, rep.name))
    return runs


def formable_run_ids(results_dir: Path, scenario: Any) -> list[str]:
    """Runs the other validators scored: a form rates only runs whose measures will count.

    Read from the validators' outputs rather than measures.json, whose status may wait on
    this very form; a run that ended as an outcome (``failed``) is never listed.
    """
    others = [name for name, spec in scenario.validators.items() if spec.mode != MODE]
    results = ResultsFolder(Path(results_dir))
    eligible = []
    for run in scenario_run_ids(results_dir, scenario):
        folder = results.run_by_id(run)
        if not folder.patch.is_file() or _run_failed(folder):
            continue
        if all(_validator_ok(folder, name) for name in others):
            eligible.append(run)
    return eligible


def _run_failed(folder: RunFolder) -> bool:
    measures = read_json(folder.measures)
    return isinstance(measures, dict) and measures.get("status") == "failed"


def _validator_ok(folder: RunFolder, name: str) -> bool:
    output = read_json(folder.validator_output(name))
    return isinstance(output, dict) and output.get("ok") is True


def read_json(path: Path) -> Any:
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
    folder = ResultsFolder(results_dir)
    blank = folder.blank_form(validator_name)
    _refuse_to_overwrite_answers(blank, folder.filled_form(validator_name))
    keys = read_keys(results_dir, validator_name)
    if keys is None:
        keys = {"seed": secrets.randbits(62) if seed is None else seed, "runs": {}}
    runs = formable_run_ids(results_dir, scenario)
    if calibrated_metric(spec):  # a sample of them, on the judge's question
        runs = calibration_sample(keys, runs, spec.options["sample"])
    ids = _assign_ids(keys, runs)
    order = _shuffled(sorted(runs), keys["seed"])
    shows = list(spec.options.get("show", []))
    _write_material(results_dir, scenario, validator_name, {ids[r]: r for r in order}, shows)
    if calibrated_metric(spec):
        write_question(results_dir, scenario, spec, order)
    blank.parent.mkdir(parents=True, exist_ok=True)
    blank.write_text(
        _blank_text(scenario, validator_name, spec, [ids[r] for r in order]), encoding="utf-8"
    )
    _write_keys(results_dir, validator_name, keys)
    return blank


def _refuse_to_overwrite_answers(blank: Path, filled: Path) -> None:
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
                fix=f"move it to {filled} (the filled form, "
                "which agentab never writes), then run this again",
            )
        )


def read_keys(results_dir: Path, validator_name: str) -> dict | None:
    keys = read_json(ResultsFolder(Path(results_dir)).form_keys(validator_name))
    if isinstance(keys, dict) and isinstance(keys.get("runs"), dict) and "seed" in keys:
        return keys
    return None


def _write_keys(results_dir: Path, validator_name: str, keys: dict) -> None:
    path = ResultsFolder(results_dir).form_keys(validator_name)
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


def first_user_message(transcript: Path) -> str:
    try:
        lines = transcript.read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    for line in lines:
        entry = json.loads(line)
        if entry.get("type") == "message" and entry.get("role") == "user":
            return str(entry.get("text", ""))
    return ""


def run_material(results: ResultsFolder, scenario: Any, run: str) -> dict:
    """What a person sees of a run: its own task, final message and changed files, read from
    its run.json, its patch and the frozen scenario (never anything that names its cell)."""
    source = results.run_by_id(run)
    record = read_json(source.record) or {}
    slug = run.partition("/")[0]
    # The task as the agent received it: the first message of its transcript. (The frozen
    # scenario names a prompt_file it does not carry along.)
    task = first_user_message(source.transcript) or next(
        (cell.prompt for cell in scenario.run_cells if cell.slug == slug), ""
    )
    patch = source.patch.read_bytes() if source.patch.exists() else b""
    return {
        "task_prompt": task,
        "final_message": (record.get("facts") or {}).get("final_message", ""),
        "changed_files": changed_files(record, patch),
    }


def _write_material(
    results_dir: Path, scenario: Any, validator_name: str, runs: dict[str, str], shows: list[str]
):
    results = ResultsFolder(results_dir)
    folder = results.form_material(validator_name)
    if folder.exists():
        shutil.rmtree(folder)  # ours alone: stale ids must not stay beside the new form
    folder.mkdir(parents=True)
    for form_id, run in runs.items():
        source = results.run_by_id(run)
        context = run_material(results, scenario, run)
        for shown in shows:
            target = folder / f"{form_id}{MATERIAL_SUFFIX[shown]}"
            if shown == "diff":
                shutil.copyfile(source.patch, target)
            elif shown == "changed_files":
                # One name a line: a name holding a newline is quoted (git's way), never two.
                names = context.get(shown) or []
                target.write_text("".join(f"{shown_path(f)}\n" for f in names), "utf-8")
            else:
                # A final message may hold a lone surrogate (a JSON escape the stream carried).
                text = str(context.get(shown) or "(empty)") + "\n"
                target.write_text(text, "utf-8", errors="backslashreplace")


def question_lines(validator_name: str, spec: Any) -> list[str]:
    """What each metric the form fills means, as the scenario asks it (`questions`): said once
    above the runs, so that every run's answer is to the same question."""
    if calibrated_metric(spec):
        return []  # the judge's own question, in its material (calibrating.py)
    questions = spec.options.get("questions") or {}
    lines = ["#", "# The questions:"]
    for metric in spec.options.get("fills", []):
        asked = " ".join(str(questions.get(metric) or "").split())
        if not asked:
            asked = (
                f"(the scenario does not say what it means: ask its author, or set "
                f'[validators.{validator_name}] questions = {{ {metric} = "…" }})'
            )
        lines.append(f"#   {metric}: {asked}")
    return lines


def _blank_text(scenario: Any, validator_name: str, spec: Any, ids: list[str]) -> str:
    fills = list(spec.options.get("fills", []))
    shows = list(spec.options.get("show", []))
    # Names beside the blank form, in the same folder.
    filled = ResultsFolder(Path()).filled_form(validator_name).name
    material_dir = ResultsFolder(Path()).form_material(validator_name).name
    lines = [
        f'# Blind form of validator "{validator_name}" (scenario "{scenario.name}").',
        "#",
        f"# To fill it, copy this file to {filled} in this folder. For each run",
        f"# below, read its material in {material_dir}/, then replace each",
        '# commented line by an answer: true or false, a number, or a "text" in quotes.',
        "# Answer a metric the same way for every run. A run left unanswered stays pending.",
        f"# agentab rewrites this file when runs are added; it never writes {filled}.",
        *(blank_header(spec, len(ids)) if calibrated_metric(spec) else []),
        *question_lines(validator_name, spec),
        "",
    ]
    for form_id in ids:
        material = [f"{material_dir}/{form_id}{MATERIAL_SUFFIX[s]}" for s in shows]
        lines.append(f'[runs."{form_id}"]')
        lines.append(f"{MATERIAL_KEY} = {json.dumps(material)}")
        lines.extend(f"# {metric} = " for metric in fills)
        lines.append("")
    return "\n".join(lines)
