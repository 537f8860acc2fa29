"""The budget ledger: what a scenario's runs spent, and what the runs in flight may spend.

With real providers a matrix costs real money. `[protocol] budget_usd` says how much its runs
may spend; a run whose start would pass it (spent + the estimates of the runs in flight + its
own estimate) is not started, and a run that started is never cut: its agent runs to its end.

The ledger is one file, `results/<name>/budget.json`, changed only under an exclusive `flock` of
`results/<name>/.budget.lock`: the run steps of one workflow take their turn at it whether they
run as parallel jobs on one machine or on a cluster's nodes sharing the folder. It holds

- `spent`: one entry per attempt that ended (its run, its cost, how the cost is known, and how
  it ended: `outcome` or `fault`). A fault costs what its requests cost; the money is spent
  even though the run is redone. A cost nobody can tell (a provider that states none, a model
  the price table lacks) counts at the attempt's estimate;
- `in_flight`: one reservation per run started and not ended, at its estimate: the mean cost
  of the finished runs of its cell, else of the scenario, else the budget's even share
  (`budget_usd` / the runs planned), for the first runs;
- `not_started`: the runs refused, which the next workflow start runs again when the budget
  has room by then (a raised `budget_usd`, or a scenario without one).

When the ledger is made, the runs the results folder already holds (a pilot run before the
scenario had a budget) are its first entries, at the cost their run.json states.

A reservation is released when its attempt ends, replaced by what the attempt cost, whatever
the end (an outcome, a fault, a stop). One a killed workflow left behind is cleared when the
next one starts (`clear_in_flight`): no run of that results folder is in flight then.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from agentab.files import exclusive_lock, write_json
from agentab.layout import ResultsFolder

NOT_STARTED = "not-started"  # a run's outcome status, and its measures' status
BUDGET_REACHED = "not started: budget reached"
SCHEMA = 1
CENT_FRACTION = 1e-9  # sums of floats: 0.2 + 0.1 is not above a budget of 0.3


@dataclass
class LedgerState:
    """The ledger's content."""

    spent: list[dict] = field(default_factory=list)
    in_flight: dict[str, dict] = field(default_factory=dict)
    not_started: list[str] = field(default_factory=list)

    @property
    def spent_usd(self) -> float:
        return sum(entry["usd"] for entry in self.spent)

    @property
    def in_flight_usd(self) -> float:
        return sum(entry["usd"] for entry in self.in_flight.values())

    def as_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "spent_usd": self.spent_usd,
            "spent": self.spent,
            "in_flight": self.in_flight,
            "not_started": self.not_started,
        }


@dataclass(frozen=True)
class Decision:
    """Whether a run may start, and the figures that decided it."""

    run: str
    started: bool
    estimate_usd: float
    estimate_from: str  # what the estimate is the mean of, or the even share
    spent_usd: float
    in_flight_usd: float
    budget_usd: float

    def reason(self) -> str:
        """`not started: budget reached (spent 0.41 + in flight 0.10 + this run ~0.05 > 0.50 USD)`."""
        return (
            f"{BUDGET_REACHED} (spent {usd(self.spent_usd)} + in flight "
            f"{usd(self.in_flight_usd)} + this run ~{usd(self.estimate_usd)} "
            f"> budget_usd {usd(self.budget_usd)})"
        )


def usd(value: float) -> str:
    """0.0123 USD as `0.0123`, 12.5 as `12.50`: cents, or four figures below a dollar."""
    return f"{value:.2f}" if value >= 1 or value == 0 else f"{value:.4f}"


def read_ledger(path: Path) -> LedgerState:
    """The ledger as last written (it is replaced whole: a reader never sees half of one)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return LedgerState()
    if not isinstance(data, dict):
        return LedgerState()
    spent = [e for e in data.get("spent") or [] if isinstance(e, dict) and _number(e.get("usd"))]
    in_flight = {
        run: entry
        for run, entry in (data.get("in_flight") or {}).items()
        if isinstance(entry, dict) and _number(entry.get("usd"))
    }
    not_started = [run for run in data.get("not_started") or [] if isinstance(run, str)]
    return LedgerState(spent, in_flight, not_started)


class Ledger:
    """One results folder's ledger, against one budget."""

    def __init__(self, results_dir: Path, budget_usd: float | None, planned_runs: int):
        self.folder = ResultsFolder(Path(results_dir))
        self.budget_usd = budget_usd
        self.planned_runs = max(1, planned_runs)

    @contextmanager
    def changing(self) -> Iterator[LedgerState]:
        """The ledger, read and written back under its lock."""
        with exclusive_lock(self.folder.budget_lock):
            if self.folder.budget_ledger.exists():
                state = read_ledger(self.folder.budget_ledger)
            else:  # runs measured before the scenario had a budget spent money too
                state = LedgerState(spent=spent_before(self.folder))
            yield state
            write_json(state.as_dict(), self.folder.budget_ledger)

    def state(self) -> LedgerState:
        return read_ledger(self.folder.budget_ledger)

    def estimate(self, state: LedgerState, slug: str) -> tuple[float, str]:
        """A run's expected cost: the mean of its cell's finished runs, else of the scenario's,
        else the budget's even share over the runs planned."""
        finished = [e for e in state.spent if e.get("end") == "outcome"]
        own = [e["usd"] for e in finished if str(e.get("run", "")).startswith(f"{slug}/")]
        if own:
            return sum(own) / len(own), f"the mean of {len(own)} finished runs of its cell"
        if finished:
            mean = sum(e["usd"] for e in finished) / len(finished)
            return mean, f"the mean of {len(finished)} finished runs"
        share = (self.budget_usd or 0.0) / self.planned_runs
        return share, f"budget_usd / {self.planned_runs} runs planned"

    def reserve(self, run: str, slug: str) -> Decision:
        """Reserve a run's estimate if spent + in flight + it stays within the budget; else
        note the run as not started. An earlier attempt's reservation of the same run is
        replaced (a retry, or an attempt that ended a stale twin)."""
        with self.changing() as state:
            state.in_flight.pop(run, None)
            estimate, source = self.estimate(state, slug)
            spent, flying = state.spent_usd, state.in_flight_usd
            budget = self.budget_usd if self.budget_usd is not None else float("inf")
            started = spent + flying + estimate <= budget + CENT_FRACTION
            if started:
                state.in_flight[run] = {
                    "usd": estimate,
                    "since": _now(),
                    "host": _host(),
                    "pid": os.getpid(),
                }
                if run in state.not_started:
                    state.not_started.remove(run)
            elif run not in state.not_started:
                state.not_started.append(run)
        return Decision(run, started, estimate, source, spent, flying, budget)

    def settle(self, run: str, cost_usd: float | None, how: str | None, end: str) -> float:
        """The attempt ended: its reservation is replaced by what it cost (its estimate when
        nobody can tell). Returns the cost counted."""
        with self.changing() as state:
            reserved = state.in_flight.pop(run, {}).get("usd", 0.0)
            if cost_usd is None:
                cost_usd, how = reserved, "its estimate: the cost is not known"
            state.spent.append(
                {"run": run, "usd": cost_usd, "how": how or "", "end": end, "at": _now()}
            )
        return cost_usd

    def clear_in_flight(self) -> list[str]:
        """Reservations left by a workflow that was killed; called when one starts, with no
        run of this results folder in flight."""
        if not self.folder.budget_ledger.exists():
            return []
        with self.changing() as state:
            left = sorted(state.in_flight)
            state.in_flight.clear()
        return left

    def reopen(self) -> list[str]:
        """The runs not started that the budget now has room for (all of them, if it has room
        for one: their steps ask again, in turn), taken off the list."""
        if not self.folder.budget_ledger.exists():
            return []
        with self.changing() as state:
            if not state.not_started or not self.has_room(state):
                return []
            reopened, state.not_started = state.not_started, []
        return reopened

    def has_room(self, state: LedgerState) -> bool:
        """Whether one more run of the scenario's mean cost fits in the budget."""
        if self.budget_usd is None:
            return True
        estimate, _ = self.estimate(state, "")
        return state.spent_usd + state.in_flight_usd + estimate <= self.budget_usd + CENT_FRACTION


def spent_before(folder: ResultsFolder) -> list[dict]:
    """What the runs a results folder already holds cost, from their run.json: the ledger's
    first entries when it is made (a budget added to a scenario after a pilot counts it)."""
    entries = []
    for record in sorted(folder.runs_root.glob("*/r*/run.json")):
        try:
            run = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(run, dict) or (run.get("outcome") or {}).get("status") == NOT_STARTED:
            continue
        cost = (run.get("cost") or {}).get("usd", (run.get("facts") or {}).get("cost_usd"))
        known = _number(cost)
        entries.append(
            {
                "run": str(run.get("run") or f"{record.parent.parent.name}/{record.parent.name}"),
                "usd": float(cost) if known else 0.0,
                "how": "run.json, before the budget" if known else "run.json: cost unknown",
                "end": "outcome",
                "at": _now(),
            }
        )
    return entries


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _host() -> str:
    """This machine's name, for a reservation (socket imported here: the synthesis reads the
    ledger's names without it)."""
    import socket

    return socket.gethostname()
