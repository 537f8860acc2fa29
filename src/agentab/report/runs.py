"""Every run a results folder should hold, with its status and the reason for it.

A run's status is its measures.json's (`valid`, `invalid`, `failed`); a run without one is a
`fault` when its folder keeps a `faults.jsonl` (the harness could not do it, and the workflow
will redo it), `not-started` when the scenario's budget did not let it start (`not started: budget reached`;
the workflow runs it once the budget has room), `missing` otherwise; a measures.json that
cannot be read is `unreadable`. A run
any of whose files changed after agentab wrote them (`synthesis/runs/integrity.py`, every file
checked) is `invalid`, whatever its measures.json says.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from agentab.layout import split_run_slug
from agentab.report.sources import (
    MEASURES_FILE,
    NOT_STARTED,
    BadFile,
    RunRecord,
    not_started_reason,
    read_runs,
    runs_given,
)
from agentab.synthesis.runs.integrity import read_secret, with_run_changes
from agentab.synthesis.runs.measures import run_id

FAULTS_FILE = "faults.jsonl"
RUN_STATUSES = ("valid", "invalid", "failed", "fault", "not-started", "missing", "unreadable")
# Keys a faults.jsonl line may say its reason under, the most telling first (`fault`: what
# the run step writes, `run.record.record_fault`).
FAULT_REASON_KEYS = ("fault", "reason", "message", "problem", "error")


@dataclass(frozen=True)
class RunEntry:
    """One expected run: where it lives, what became of it, and why."""

    run: str  # <cell slug>/r<NN>
    cell: str
    rep: int
    status: str
    reason: str
    faults: int = 0  # attempts the harness could not do, kept in faults.jsonl
    record: RunRecord | None = field(default=None, compare=False, repr=False)
    task: str = ""  # its task, in a scenario with [tasks.*]

    @property
    def slug(self) -> str:
        """The cell's slug (its runs' folder is `<slug>--<task>` with tasks)."""
        return split_run_slug(self.run.partition("/")[0])[0]

    @property
    def folder(self) -> str:
        """The run's folder, relative to the results folder."""
        return f"runs/{self.run}"


def list_runs(
    results_dir: Path,
    scenario,
    records: list[RunRecord] | None = None,
    bad_files: list[BadFile] | None = None,
    given: dict[str, int] | None = None,
) -> list[RunEntry]:
    """Every run of the scenario (cells in matrix order, then repetitions), and any measured
    run the scenario no longer plans, last. `records` and `bad_files`: what `read_runs` gave,
    when the caller has read them already. `given`: with sequential stopping, each cell's runs
    of the waves it got (a run of a wave it never got is not planned)."""
    results_dir = Path(results_dir)
    if records is None or bad_files is None:
        records, bad_files = read_runs(results_dir, scenario)
    if given is None:
        given = runs_given(results_dir, scenario)
    secret = read_secret(results_dir)
    records = [with_changes(record, results_dir, secret) for record in records]
    by_run = {record.run: record for record in records}
    unreadable = {bad.path.rpartition("/")[0].removeprefix("runs/"): bad for bad in bad_files}
    entries = []
    for cell in scenario.run_cells:  # a cell per cell and task, with tasks
        planned = scenario.repetitions if given is None else given.get(cell.name, 0)
        for rep in range(1, planned + 1):
            run = run_id(cell.slug, rep)
            faults = read_faults(results_dir / "runs" / run)
            record = by_run.pop(run, None)
            if record is not None:
                entries.append(_measured(record, len(faults)))
            elif run in unreadable:
                reason = f"{unreadable[run].path} {unreadable[run].message}"
                entries.append(
                    RunEntry(run, cell.name, rep, "unreadable", reason, len(faults), task=cell.task)
                )
            elif reason := not_started_reason(results_dir / "runs" / run / MEASURES_FILE):
                entries.append(
                    RunEntry(run, cell.name, rep, NOT_STARTED, reason, len(faults), task=cell.task)
                )
            elif faults:
                reason = fault_reason(faults[-1])
                entries.append(
                    RunEntry(run, cell.name, rep, "fault", reason, len(faults), task=cell.task)
                )
            else:
                entries.append(
                    RunEntry(run, cell.name, rep, "missing", "no measures.json yet", task=cell.task)
                )
    # Runs beyond the scenario's repetitions (it was lowered after they ran) are still shown.
    for record in by_run.values():
        entries.append(_measured(record, len(read_faults(results_dir / "runs" / record.run))))
    return entries


def with_changes(record: RunRecord, results_dir: Path, secret: str | None) -> RunRecord:
    """The record, made invalid when a file of its run changed after agentab wrote it (the
    records `read_runs` gives are already; a record from elsewhere is checked here)."""
    return with_run_changes(record, results_dir / "runs" / record.run, secret)


def _measured(record: RunRecord, faults: int) -> RunEntry:
    return RunEntry(
        run=record.run,
        cell=record.cell,
        rep=record.rep,
        status=record.status,
        reason=run_reason(record),
        faults=faults,
        record=record,
        task=record.task,
    )


def run_reason(record: RunRecord) -> str:
    """Why a run is not scored, or what it still waits for."""
    if record.problems:
        return "; ".join(record.problems)
    if record.status != "valid":
        return "no reason recorded"
    if record.pending:
        return f"pending a form: {', '.join(record.pending)}"
    return ""


def read_faults(folder: Path) -> list[dict]:
    """The attempts the harness could not do, oldest first (one JSON object a line)."""
    try:
        text = (Path(folder) / FAULTS_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    faults = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            item = {"reason": line.strip()}
        faults.append(item if isinstance(item, dict) else {"reason": str(item)})
    return faults


def fault_reason(fault: dict) -> str:
    """The fault in words: its message, never the JSON line it was kept as."""
    for key in FAULT_REASON_KEYS:
        if fault.get(key):
            return " ".join(str(fault[key]).split())
    said = "; ".join(f"{key} {value}" for key, value in sorted(fault.items()) if key != "at")
    return (
        f"a fault with no reason recorded ({' '.join(said.split())})"
        if said
        else ("a fault with no reason recorded")
    )
