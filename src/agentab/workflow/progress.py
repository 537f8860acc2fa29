"""Progress in runs, not jobs, while the workflow runs.

A person watching a matrix wants `12/40 runs · 0 faults · 1m10s · ~3m left · 180k tokens`,
not Snakemake's job count (four jobs a run, and cheap ones). `start_progress(run_folders)`,
called from the Snakefile's `onstart:` handler, starts a daemon thread in the Snakemake process
that looks at the run folders every few seconds (a measures.json is a measured run; each line
of a faults.jsonl is a fault) and prints a line whenever the count changes. It reads only
files, so it works the same when the jobs run on a cluster's nodes.

Cost is shown only where a provider reports it or a price is known: the offline model costs
nothing unless its policy sets a price, so its runs count no dollars and the line says so. A
scenario with `[protocol] budget_usd` shows its spend against it, from its ledger (faults
included), and the runs the budget did not start: `… · 2 not started (budget reached) ·
spent 0.0412 of 0.0500 USD budget`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from agentab.budget import NOT_STARTED, read_ledger, usd
from agentab.workflow.failed_jobs import failed_job_lines
from agentab.workflow.storage import storage_problem

OFFLINE_PROVIDER = "offline"
MEASURES_FILE = "measures.json"
FAULTS_FILE = "faults.jsonl"
INTERVAL_S = 5.0


@dataclass(frozen=True)
class RunUsage:
    """What a measured run used, from its measures.json provenance."""

    tokens: int
    cost_usd: float | None  # None: no cost reported, or the offline model
    offline: bool
    not_started: bool = False  # the budget did not start it: not a run measured


@dataclass
class Snapshot:
    """The runs as the files show them at one moment."""

    total: int
    measured: int
    faults: int
    tokens: int
    cost_usd: float  # over the runs whose provider reports a cost
    priced_runs: int
    offline_runs: int
    not_started: int = 0
    budget: tuple[float, float] | None = None  # (spent, budget) over the scenarios with one
    wave: tuple[int, int] | None = None  # (the wave running, the most) of sequential scenarios


@dataclass
class RunCounter:
    """Counts the runs of a list of run folders, reading each measures.json once.

    `redone`: the measures.json files this invocation makes again (a rerun after an edit). Until
    it has, the old one is not a run measured now: one counts only once written since `since`
    (nanoseconds since the epoch)."""

    folders: list[Path]
    redone: frozenset[Path] = frozenset()
    since: int = 0
    budgets: tuple[tuple[Path, float], ...] = ()  # (ledger, budget_usd) per scenario with one
    waves: tuple[tuple[Path, int], ...] = ()  # (waves folder, most waves) per sequential scenario
    _usage: dict[Path, tuple[int, RunUsage]] = field(default_factory=dict)

    def snapshot(self) -> Snapshot:
        measured = faults = tokens = priced = offline = not_started = 0
        cost = 0.0
        for folder in self.folders:
            faults += count_lines(folder / FAULTS_FILE)
            usage = self._measured(folder / MEASURES_FILE)
            if usage is None:
                continue
            if usage.not_started:
                not_started += 1
                continue
            measured += 1
            tokens += usage.tokens
            offline += usage.offline
            if usage.cost_usd is not None:
                priced += 1
                cost += usage.cost_usd
        budget = None
        if self.budgets:
            spent = sum(read_ledger(ledger).spent_usd for ledger, _ in self.budgets)
            budget = (spent, sum(limit for _, limit in self.budgets))
        return Snapshot(
            len(self.folders),
            measured,
            faults,
            tokens,
            cost,
            priced,
            offline,
            not_started,
            budget,
            self._wave(),
        )

    def _wave(self) -> tuple[int, int] | None:
        """The wave running: one past the decisions written (the furthest scenario's)."""
        if not self.waves:
            return None
        running = [(min(most, count_decisions(folder) + 1), most) for folder, most in self.waves]
        return max(running)

    def _measured(self, path: Path) -> RunUsage | None:
        try:
            stamp = os.stat(path).st_mtime_ns
        except OSError:
            self._usage.pop(path, None)
            return None
        if stamp < self.since and path.absolute() in self.redone:
            return None  # the measures of before the edit, about to be made again
        known = self._usage.get(path)
        if known is None or known[0] != stamp:
            known = (stamp, read_usage(path))
            self._usage[path] = known
        return known[1]


def read_usage(path: Path) -> RunUsage:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        provenance = data.get("provenance") or {}
    except (OSError, ValueError, AttributeError):
        return RunUsage(0, None, False)
    if data.get("status") == NOT_STARTED:
        return RunUsage(0, None, False, not_started=True)
    tokens = provenance.get("tokens") or {}
    used = sum(v for v in tokens.values() if isinstance(v, int) and not isinstance(v, bool))
    offline = provenance.get("provider") == OFFLINE_PROVIDER
    cost = provenance.get("cost_usd")
    priced = isinstance(cost, int | float) and not isinstance(cost, bool)
    priced = priced and (not offline or cost > 0)  # a priced offline policy costs something
    return RunUsage(used, float(cost) if priced else None, offline)


def count_decisions(folder: Path) -> int:
    """The wave decisions written in a sequential scenario's waves folder."""
    try:
        return sum(1 for name in os.listdir(folder) if name.endswith(".json"))
    except OSError:
        return 0


def count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            return sum(1 for line in handle if line.strip())
    except OSError:
        return 0


# ------------------------------------------------------------------------------ the line


def progress_line(now: Snapshot, start: Snapshot, elapsed_s: float) -> str:
    """`12/40 runs · 0 faults · 1m10s · ~3m left · 180k tokens` (and the cost, if any)."""
    parts = [
        f"{now.measured}/{now.total} runs",
        f"{now.faults - start.faults} fault{'s' if now.faults - start.faults != 1 else ''}",
        duration(elapsed_s),
    ]
    left = time_left(now, start, elapsed_s)
    if left is not None:
        parts.append(f"~{duration(left, coarse=True)} left")
    parts.append(f"{count(now.tokens)} tokens")
    if now.wave is not None:
        parts.append(f"wave {now.wave[0]}/{now.wave[1]}")
    if now.not_started:
        parts.append(f"{now.not_started} not started (budget reached)")
    if now.budget is not None:
        parts.append(f"spent {usd(now.budget[0])} of {usd(now.budget[1])} USD budget")
    elif now.priced_runs:
        parts.append(f"{now.cost_usd:.2f} USD")
    elif now.offline_runs and now.offline_runs == now.measured:
        parts.append("no cost (offline model)")
    return "agentab: " + " · ".join(parts)


def time_left(now: Snapshot, start: Snapshot, elapsed_s: float) -> float | None:
    """The remaining runs at the pace of the runs measured since the start; None until one
    is, and once every run is."""
    done = now.measured - start.measured
    left = now.total - now.measured - now.not_started
    if done <= 0 or elapsed_s <= 0 or left <= 0:
        return None
    return left * elapsed_s / done


def duration(seconds: float, coarse: bool = False) -> str:
    """41s, 1m10s, 2h05m; coarse: 40s, 3m, 2h05m (an estimate has no seconds to give)."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        if coarse:
            return f"{minutes + (rest >= 30)}m"
        return f"{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def count(value: int) -> str:
    """950, 180k, 1.2M."""
    if value < 1000:
        return str(value)
    if value < 1_000_000:
        return f"{value / 1000:.0f}k" if value >= 10_000 else f"{value / 1000:.1f}k"
    return f"{value / 1_000_000:.1f}M"


# ---------------------------------------------------------------------------- the thread


class Progress:
    """A daemon thread printing the progress line whenever the runs or faults change."""

    def __init__(
        self,
        folders: Iterable[Path],
        out: TextIO | None = None,
        interval_s: float = INTERVAL_S,
        clock=time.monotonic,
        redone: Iterable[Path] = (),
        budgets: Iterable[tuple[Path, float]] = (),
        waves: Iterable[tuple[Path, int]] = (),
    ):
        self.counter = RunCounter(
            [Path(folder) for folder in folders],
            frozenset(Path(path).absolute() for path in redone),
            time.time_ns(),
            tuple((Path(ledger), float(limit)) for ledger, limit in budgets),
            tuple((Path(folder), int(most)) for folder, most in waves),
        )
        self.out = out
        self.interval_s = interval_s
        self.clock = clock
        self.started = clock()
        self.start = self.counter.snapshot()
        self.shown: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="agentab-progress", daemon=True)

    def begin(self) -> Progress:
        self.tick()
        self._thread.start()
        return self

    def tick(self, force: bool = False) -> str | None:
        """Print the line if the counts changed since the last one (or when forced)."""
        now = self.counter.snapshot()
        key = (now.measured, now.faults, now.not_started)
        if key == self.shown and not force:
            return None
        self.shown = key
        line = progress_line(now, self.start, self.clock() - self.started)
        out = self.out or sys.stderr
        print(line, file=out, flush=True)
        return line

    def stop(self) -> None:
        """End the thread, and print the last line if it changed."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.interval_s + 1)
        self.tick()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.tick()
            except Exception as error:  # a progress line must never stop the workflow
                print(f"agentab: progress stopped: {error}", file=self.out or sys.stderr)
                return


def start_progress(
    folders: Iterable[Path],
    interval_s: float = INTERVAL_S,
    redone: Iterable[Path] = (),
    budgets: Iterable[tuple[Path, float]] = (),
    waves: Iterable[tuple[Path, int]] = (),
) -> Progress:
    return Progress(
        folders, interval_s=interval_s, redone=redone, budgets=budgets, waves=waves
    ).begin()


def outputs_due(snakemake_workflow, rule: str) -> list[Path]:
    """The outputs of `rule` that this invocation makes (its jobs that must run), from
    Snakemake's plan; none when it has no plan to ask."""
    dag = getattr(snakemake_workflow, "dag", None)
    if dag is None:
        return []
    return [
        Path(path) for job in dag.needrun_jobs() if job.rule.name == rule for path in job.output
    ]


# ------------------------------------------------------------------------- after a failure

USER_ERROR_EXIT = 2
FAULT_EXIT = 3
STOPPED_EXITS = range(129, 160)  # 128 + the signal's number
# How Snakemake's log gives a failed shell job's exit status (9.27; a subprocess message).
EXIT_STATUS = re.compile(r"returned non-zero exit status (\d+)\.")


def failed_exit_statuses(logs: Iterable[Path | str]) -> list[int]:
    """The exit status of every job that failed, from Snakemake's logs of this invocation."""
    statuses = []
    for log in logs:
        try:
            text = Path(log).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        statuses += [int(found) for found in EXIT_STATUS.findall(text)]
    return statuses


def failure_advice(logs: Iterable[Path | str], written: Iterable[Path] = ()) -> str:
    """What to do after a failed invocation. A rerun redoes a fault or a stopped job; it cannot
    help a job that stopped on an error a person must fix (exit 2), so that gets no such advice.
    A full disk or a read-only folder among those the workflow writes (`written`) is said first:
    a job's own message may have had nowhere to go, its log being on that disk."""
    if found := storage_problem(list(written)):
        return "agentab: " + found.render()
    logs = list(logs) if not isinstance(logs, str | Path) else [logs]
    said = "".join(line + "\n" for line in failed_job_lines(logs))  # each job's own reason
    return said + what_to_do(failed_exit_statuses(logs))


def what_to_do(statuses: list[int]) -> str:
    """The last line, from the failed jobs' exit statuses."""
    user_errors = statuses.count(USER_ERROR_EXIT)
    redone = sum(status == FAULT_EXIT or status in STOPPED_EXITS for status in statuses)
    if user_errors:
        text = (
            f"agentab: {plural(user_errors, 'job')} stopped on an error a person must fix: its "
            "message above names the file, the key and the fix; until it is fixed, every "
            "invocation stops on it the same way."
        )
        if redone:
            text += f" Once it is fixed, the next invocation also redoes {plural(redone, 'job')} that faulted or were stopped."
        return text
    if redone and len(statuses) == redone:
        return (
            f"agentab: {plural(redone, 'job')} faulted or were stopped: run the same command "
            "again to redo only what is missing."
        )
    return "agentab: a job failed: its error is above, with the log to read."


def plural(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"
