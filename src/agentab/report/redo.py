"""`redo_runs`: remove chosen runs and what depends on them, so the workflow redoes them.

Snakemake rebuilds a missing intermediate file only when a target needs rebuilding: deleting a
run's measures.json under an up-to-date synthesis changes nothing. So a redo removes the runs'
files and the outputs built from every run: the synthesis, the report, and the checked answers
of a filled form. The next `snakemake` then reruns exactly those runs (clone, agent, validators,
measures) and the cheap steps over all runs (form checking, measures fed by a filled form, the
synthesis, the blank forms, the report); no other agent run or validator.

A run's `faults.jsonl` is kept: it is the history of attempts the harness could not do, and a
redo does not make those attempts not have happened. For the same reason a measured run
(valid, failed or invalid) that is redone leaves a line in the run's `redone.jsonl` (its status and reason), which the
synthesis names per cell: redoing only the runs that failed must never pass for a first table.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.layout import ResultsFolder
from agentab.report.builder import report_dir
from agentab.report.runs import FAULTS_FILE, RunEntry, list_runs
from agentab.report.sources import load_frozen_scenario, synthesis_outputs
from agentab.synthesis.runs.redone import REDONE_FILE
from agentab.validators.form_blank import form_validators
from agentab.workflow.holding import refuse_while_held

REDO_STATUSES = ("failed", "invalid", "fault", "unreadable")
KEPT_FILES = (FAULTS_FILE, REDONE_FILE)
MEASURED_STATUSES = ("valid", "failed", "invalid")


@dataclass
class RedoResult:
    runs: list[RunEntry]
    removed: list[Path]  # files and folders removed, in the order they were


def choose_runs(
    results_dir: Path, scenario, run_ids: list[str], statuses: list[str]
) -> list[RunEntry]:
    """The runs named (as `agentab runs` prints them, or as their folders), and the runs of
    the statuses given, in the listing's order."""
    entries = list_runs(results_dir, scenario)
    by_id = {entry.run: entry for entry in entries}
    wanted = set()
    unknown = []
    for given in run_ids:
        run = normalise_run_id(given)
        if run in by_id:
            wanted.add(run)
        else:
            unknown.append(given)
    if unknown:
        raise AgentabError(
            problem(
                results_dir,
                "",
                f"no such run: {', '.join(unknown)}",
                f"name runs as `agentab runs {results_dir}` lists them, e.g. "
                f"{entries[0].run if entries else '<cell slug>/r01'}",
            )
        )
    return [entry for entry in entries if entry.run in wanted or entry.status in statuses]


def normalise_run_id(given: str) -> str:
    """`rule-off/r03` from `rule-off/r03`, `runs/rule-off/r03/` or `results/demo/runs/...`."""
    parts = [part for part in given.strip().split("/") if part]
    if "runs" in parts:
        parts = parts[len(parts) - 1 - parts[::-1].index("runs") + 1 :]
    return "/".join(parts[:2])


def redo_runs(results_dir: Path, run_ids: list[str] = (), statuses: list[str] = ()) -> RedoResult:
    results_dir = Path(results_dir)
    scenario = load_frozen_scenario(results_dir)
    refuse_while_held(results_dir, "`agentab redo`")
    for status in statuses:
        if status not in REDO_STATUSES:
            raise AgentabError(
                problem(
                    "--status",
                    "",
                    f"cannot redo runs by status {status!r}",
                    f"use one of {', '.join(REDO_STATUSES)}, or name the runs",
                )
            )
    chosen = choose_runs(results_dir, scenario, list(run_ids), list(statuses))
    removed: list[Path] = []
    if not chosen:
        return RedoResult([], removed)
    for entry in chosen:
        if entry.status in MEASURED_STATUSES:
            record_redo(results_dir / entry.folder, entry)
        removed += remove_run_files(results_dir / entry.folder)
    removed += remove_dependent_outputs(results_dir, scenario)
    return RedoResult(chosen, removed)


def record_redo(folder: Path, entry: RunEntry) -> None:
    """Keep the measured attempt's status and reason in the run's `redone.jsonl`."""
    line = json.dumps({"status": entry.status, "reason": entry.reason}, ensure_ascii=False)
    with (folder / REDONE_FILE).open("a", encoding="utf-8") as out:
        out.write(line + "\n")


def remove_run_files(folder: Path) -> list[Path]:
    """Everything of the run but its fault history."""
    removed = []
    if not folder.is_dir():
        return removed
    for path in sorted(folder.iterdir()):
        if path.name in KEPT_FILES:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
        removed.append(path)
    return removed


def remove_dependent_outputs(results_dir: Path, scenario) -> list[Path]:
    """The outputs built from every run: synthesis, report, checked answers of filled forms."""
    removed = []
    for path in synthesis_outputs(results_dir):
        if path.exists():
            path.unlink()
            removed.append(path)
    report = report_dir(results_dir)
    if report.exists():
        shutil.rmtree(report)
        removed.append(report)
    for name in form_validators(scenario):
        answers = ResultsFolder(Path(results_dir)).form_answers(name)
        if ResultsFolder(Path(results_dir)).filled_form(name).exists() and answers.exists():
            answers.unlink()
            removed.append(answers)
    return removed
