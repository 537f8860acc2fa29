"""Reading a results folder: its frozen scenario and every run's measures.json, checked.

A results folder is often partial (a stubborn fault, a run still going). Reading it says which
runs are missing, and a measures.json that cannot be read is a `BadFile` with its path and its
problem; it never stops the others from counting. Every path comes from `agentab.layout`.
"""

from __future__ import annotations

import errno
import json
from dataclasses import dataclass
from pathlib import Path

from agentab.budget import BUDGET_REACHED, NOT_STARTED
from agentab.errors import AgentabError, problem
from agentab.files import read_bytes, seal_holds
from agentab.layout import ResultsFolder, RunFolder, run_id, task_run_slug
from agentab.runfiles import MEASURES_VERSION, schema_version
from agentab.synthesis.runs.integrity import changed_problem, read_secret, with_run_changes

STATUSES = ("valid", "invalid", "failed")
# The layout's names of a run's measures file and of the runs' folder.
MEASURES_FILE = RunFolder(Path()).measures.name
RUNS_FOLDER = ResultsFolder(Path()).runs_root.name


@dataclass
class RunRecord:
    """One run's measures.json, checked. Nothing changes a record: `dataclasses.replace` makes
    a new one."""

    cell: str
    rep: int
    run: str
    status: str
    metrics: dict
    extra: dict
    pending: list[str]
    problems: list[str]
    provenance: dict
    receipt: dict | None = None  # the summary of the run's receipt.json, when it has one
    builtin: dict | None = None  # the built-in run metrics (synthesis.builtin), when kept
    protected_files: list | None = None  # the protected paths its patch touched
    task: str = ""  # its task, in a scenario with [tasks.*]
    failed_calls: dict | None = None  # label -> how many such calls failed (tool_failures)


@dataclass(frozen=True)
class BadFile:
    path: str  # relative to the results folder
    message: str


@dataclass(frozen=True)
class MissingRun:
    cell: str
    rep: int
    path: str  # the run folder, relative to the results folder
    task: str = ""
    reason: str = ""  # why, when it is known: `not started: budget reached (…)`


def load_frozen_scenario(results_dir: Path):
    """The scenario exactly as it was run: cells, reference and metric contract."""
    # Imported here so that the statistics stay importable on their own.
    from agentab.scenario import load_scenario

    if not Path(results_dir).is_dir():
        raise AgentabError(
            problem(
                results_dir,
                "",
                "no such results folder",
                "pass the folder a scenario's runs were written to, e.g. results/<scenario name>",
            )
        )
    folder = ResultsFolder(Path(results_dir))
    frozen = folder.frozen_scenario
    if not frozen.is_file() and not folder.runs_root.is_dir():
        raise AgentabError(
            problem(
                results_dir,
                "",
                f"holds no results: no frozen {frozen.name} and no {folder.runs_root.name}/ "
                "folder, which the workflow writes for every scenario it runs",
                "pass the results folder of a scenario that was run, results/<scenario name> "
                "(config/config.yaml `results`); run `snakemake --cores 8` first if none was",
            )
        )
    if not frozen.is_file():
        raise AgentabError(
            problem(
                frozen,
                "",
                "the frozen scenario is missing; the synthesis reads cells, reference and "
                "metric contract from it",
                "copy the scenario that was run to this path, unchanged",
            )
        )
    # The workflow checked the scenario against its schema before it froze it: the schema is
    # checked again only when the frozen copy does not load (it was edited since), and the
    # full check then names what is wrong.
    return load_scenario(frozen, check_etalon=False, check_bricks=False, check_schema=False)


def _relative_run_folder(slug: str, rep: int | str) -> str:
    """`runs/<slug>/r<NN>`: a run folder as the outputs name it, relative to the results."""
    return f"{RUNS_FOLDER}/{run_id(slug, rep)}"


def run_folders(runs_root: Path) -> list[tuple[str, str]]:
    """(slug, repetition) of every `runs/<slug>/r*` folder, sorted as their paths sort; a hidden
    name is no cell's. A folder may hold no measures.json."""
    found = [
        (folder.parent.name, folder.name)
        for folder in Path(runs_root).glob("*/r*")
        if not folder.parent.name.startswith(".") and folder.is_dir()
    ]
    return sorted(found)


def file_content(path: str) -> bytes | OSError:
    """The file's bytes, or the error its reading failed with."""
    try:
        return read_bytes(path)
    except OSError as error:
        return error


class _NoFile(Exception):
    """The run folder holds no measures.json, or one of a run the budget did not start."""


def _run_of(
    content: bytes | OSError,
    path: str,
    relative: str,
    cells_by_name: dict,
    secret: str | None = None,
    tasks: tuple[str, ...] = (),
) -> RunRecord | BadFile:
    """A checked RunRecord, or a BadFile saying what is wrong with the file's content (bytes,
    or the error its reading failed with); raises _NoFile when there is no file at `path` at
    all. With the results folder's `secret`, a measures.json whose seal does not hold is read
    as an invalid run."""
    if isinstance(content, OSError):
        if content.errno == errno.ENOENT:
            raise _NoFile(path)
        return BadFile(relative, f"cannot be read: {content}")
    try:
        data = json.loads(content.decode("utf-8"))
    except UnicodeDecodeError as error:
        return BadFile(relative, f"cannot be read: {error}")
    except json.JSONDecodeError as error:
        return BadFile(relative, f"is not valid JSON: {error}")
    except RecursionError:
        return BadFile(relative, "is not valid JSON: arrays or objects nested too deeply")
    if not isinstance(data, dict):
        return BadFile(relative, "is not a JSON object")
    # A newer agentab's file stops the synthesis: counting some runs and not others misleads.
    schema_version(data, path, MEASURES_VERSION)
    problem_text = structure_problem(data, cells_by_name, tasks)
    if problem_text:
        return BadFile(relative, problem_text)
    cell = cells_by_name[data["cell"]]
    task = data.get("task") or ""
    run_name = run_id(task_run_slug(cell.slug, task), data["rep"])
    expected = f"{RUNS_FOLDER}/{run_name}"  # `_relative_run_folder`
    if relative.rpartition("/")[0] != expected:
        of_task = f" task {task!r}" if task else ""
        return BadFile(
            relative,
            f"is for cell {data['cell']!r}{of_task} repetition {data['rep']}, which belongs in "
            f"{expected}/",
        )
    problems = [str(item) for item in data.get("problems") or []]
    status = data["status"]
    if status == NOT_STARTED:  # not a run: one of the missing, with its reason
        raise _NoFile(path)
    if secret is not None and not seal_holds(content.decode("utf-8"), secret):
        status, problems = "invalid", [*problems, changed_problem(["measures.json"])]
    return RunRecord(
        cell=data["cell"],
        rep=data["rep"],
        run=str(data.get("run") or run_name),
        status=status,
        metrics=data.get("metrics") or {},
        extra=data.get("extra") or {},
        pending=list(data.get("pending") or []),
        problems=problems,
        provenance=data.get("provenance") or {},
        receipt=data.get("receipt") if isinstance(data.get("receipt"), dict) else None,
        builtin=data.get("builtin") if isinstance(data.get("builtin"), dict) else None,
        protected_files=[
            path for path in data.get("protected_files") or [] if isinstance(path, str)
        ]
        if isinstance(data.get("protected_files"), list)
        else None,
        task=task,
        failed_calls=data.get("failed_calls")
        if isinstance(data.get("failed_calls"), dict)
        else None,
    )


def structure_problem(data: dict, cells_by_name: dict, tasks: tuple[str, ...] = ()) -> str:
    """What is wrong with the structure of a measures.json object; "" when nothing is. With
    the scenario's `tasks`, its task must be one of them (and a scenario without has none)."""
    cell, rep, status = data.get("cell"), data.get("rep"), data.get("status")
    if not isinstance(cell, str):
        return "has no 'cell' name"
    if cell not in cells_by_name:
        known = ", ".join(repr(name) for name in cells_by_name)
        return f"names cell {cell!r}, which the frozen scenario does not have (it has {known})"
    if not isinstance(rep, int) or isinstance(rep, bool) or rep < 1:
        return "has no 'rep' (an integer >= 1)"
    if status not in STATUSES and status != NOT_STARTED:
        return f"has status {status!r}; expected one of {', '.join(STATUSES)}"
    task = data.get("task") or ""
    if tasks and task not in tasks:
        return f"names task {task!r}; the frozen scenario has tasks {', '.join(tasks)}"
    for key, kind in (("metrics", dict), ("extra", dict), ("pending", list), ("problems", list)):
        if key in data and data[key] is not None and not isinstance(data[key], kind):
            return f"has a '{key}' that is not a JSON {'object' if kind is dict else 'array'}"
    if "provenance" in data and not isinstance(data["provenance"], dict | None):
        return "has a 'provenance' that is not a JSON object"
    return ""


def read_runs(results_dir: Path, scenario) -> tuple[list[RunRecord], list[BadFile]]:
    runs, bad, _ = read_all_runs(Path(results_dir), scenario)
    return runs, bad


def read_all_runs(results_dir: Path, scenario) -> tuple[list[RunRecord], list[BadFile], set[str]]:
    """The checked runs, the bad files, and every run folder that holds a measures.json."""
    cells_by_name = {cell.name: cell for cell in scenario.cells}
    order = {cell.name: index for index, cell in enumerate(scenario.cells)}
    tasks = tuple(task.name for task in scenario.tasks)
    task_order = {name: index for index, name in enumerate(tasks)}
    folder = ResultsFolder(Path(results_dir))
    root = str(folder.runs_root)
    secret = read_secret(folder.path)
    runs, bad, present = [], [], set()
    for slug, rep in run_folders(folder.runs_root):
        relative = f"{RUNS_FOLDER}/{slug}/{rep}"
        path = f"{root}/{slug}/{rep}/{MEASURES_FILE}"
        try:
            record = _run_of(
                file_content(path),
                path,
                f"{relative}/{MEASURES_FILE}",
                cells_by_name,
                secret,
                tasks,
            )
        except _NoFile:
            continue
        present.add(relative)
        if isinstance(record, BadFile):
            bad.append(record)
            continue
        # Every file of the run, as `agentab runs` checks it: both count the run alike.
        if secret is not None:
            record = with_run_changes(record, Path(root, slug, rep), secret)
        runs.append(record)
    runs.sort(key=lambda run: (order[run.cell], task_order.get(run.task, 0), run.rep))
    return runs, bad, present


def missing_runs(
    results_dir: Path, scenario, present: set[str] | None = None, given: dict | None = None
) -> list[MissingRun]:
    """Expected runs (every cell x task x repetitions 1..N) with no measures.json at all, or one
    that says the budget did not start the run (its reason then says so).

    `present` is the set of run folders (`runs/<slug>/r<NN>`) known to hold a run's, when the
    caller has just listed them; otherwise the file system is asked run by run. `given`, for
    a sequential scenario, holds each cell's runs per task of the waves it was given (the
    runs of waves it never got are not missing).
    """
    folder = ResultsFolder(Path(results_dir))
    missing = []
    for cell in scenario.run_cells:
        expected = scenario.repetitions if given is None else given.get(cell.name, 0)
        for rep in range(1, expected + 1):
            relative = _relative_run_folder(cell.slug, rep)
            if present is not None and relative in present:
                continue
            measures = folder.run(cell.slug, rep).measures
            if present is None and measures.exists() and not_started_reason(measures) is None:
                continue
            reason = not_started_reason(measures) or ""
            missing.append(MissingRun(cell.name, rep, relative, cell.task, reason))
    return missing


def not_started_reason(measures: Path) -> str | None:
    """`not started: budget reached (…)` when the measures.json is of a run the budget did not
    start; None otherwise (no file, or a run)."""
    try:
        data = json.loads(Path(measures).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("status") != NOT_STARTED:
        return None
    problems = data.get("problems") or []
    return str(problems[0]) if problems else BUDGET_REACHED
