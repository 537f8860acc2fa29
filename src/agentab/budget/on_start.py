"""The budget when a workflow starts and ends: stale reservations, runs to try again, the line.

When `snakemake` starts and no other workflow holds a results folder (`workflow.holding`), no
run of it is in flight, so every reservation in its ledger was left by a workflow that was
killed: it is cleared. The runs the budget did not
start are run now if the budget has room for them (it was raised, or removed from the
scenario): their files are removed, with the synthesis, so that Snakemake makes them again;
each run step then asks the ledger in turn. Otherwise they stay as they are, and the workflow
has nothing to do for them: `snakemake -n` lists no job, and the last line says why.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from agentab.budget.ledger import Ledger, read_ledger, usd

# Files of a run kept when it is run again: the history of its attempts.
KEPT = ("faults.jsonl", "earlier-attempts")


def ledger_of(workflow, name: str) -> Ledger:
    scenario = workflow.scenarios[name]
    return Ledger(workflow.layout.results(name).path, scenario.budget_usd, scenario.run_count)


def budget_on_start(workflow, dry: bool, held: Callable[[Path], object]) -> list[str]:
    """Clear stale reservations and reopen the runs the budget now has room for; the lines to
    tell the person. `held(results_dir)`: None when no workflow holds that results folder
    (`workflow.holding.workflow_holding`)."""
    lines = []
    for name in workflow.scenarios:
        ledger = ledger_of(workflow, name)
        if not ledger.folder.budget_ledger.exists():
            continue
        if held(ledger.folder.path) is not None:
            continue  # another workflow runs on this folder: its reservations are live
        if dry:
            state = read_ledger(ledger.folder.budget_ledger)
            if state.not_started and ledger.has_room(state):
                lines.append(
                    f"agentab: {name}: would try again {runs(len(state.not_started))} not "
                    "started by the budget"
                )
            continue
        if left := ledger.clear_in_flight():
            lines.append(
                f"agentab: {name}: cleared {len(left)} budget reservation"
                f"{'s' * (len(left) != 1)} a stopped workflow left (its runs had not ended)"
            )
        reopened = ledger.reopen()
        for run in reopened:
            remove_run_files(ledger.folder.run_by_id(run).path)
        if reopened:
            for path in ledger.folder.outputs():
                path.unlink(missing_ok=True)
            lines.append(
                f"agentab: {name}: {runs(len(reopened))} not started by the budget "
                f"{'is' if len(reopened) == 1 else 'are'} tried again: {room(ledger)}"
            )
    return lines


def runs(count: int) -> str:
    return f"{count} run{'s' * (count != 1)}"


def room(ledger: Ledger) -> str:
    state = ledger.state()
    if ledger.budget_usd is None:
        return "the scenario has no budget_usd now"
    return f"spent {usd(state.spent_usd)} of budget_usd {usd(ledger.budget_usd)} USD"


def remove_run_files(folder) -> None:
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.name in KEPT:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def budget_summary(workflow, name: str, not_started: int) -> str:
    """The end of a scenario's last line when the budget held runs back, else ""."""
    ledger = ledger_of(workflow, name)
    if not not_started:
        return ""
    state = ledger.state()
    limit = "" if ledger.budget_usd is None else f" of budget_usd {usd(ledger.budget_usd)}"
    return (
        f"; {not_started} not started: budget reached (spent {usd(state.spent_usd)}{limit} USD;"
        f" to run them, raise [protocol] budget_usd in {workflow.scenario_file(name)} and run "
        "the same command again)"
    )
