"""Runs redone after a measured attempt: `agentab redo` replaces a measured run (most often a
failed or invalid one) with a new attempt, and each replaced attempt is kept as a line of the run's `redone.jsonl`.

Redoing only the runs that failed is a way to take failures out of a cell: the new attempt may
pass where the old one failed, while the runs that passed are never given the same second
chance. So the synthesis names every such redo, per cell, as a warning; nothing here changes a
verdict (the replaced attempt's files are gone), but no reader takes a redone table for a first
one.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from agentab.files import read_json_lines

REDONE_FILE = "redone.jsonl"
SHOWN = 3


def redone_attempts(results_dir: Path) -> dict[str, list[dict]]:
    """Run id (`<slug>/r<NN>`) -> its replaced attempts, oldest first (a line that is not a
    JSON object is skipped: the file is ours, but a run's folder is not trusted)."""
    found: dict[str, list[dict]] = {}
    for path in sorted(Path(results_dir, "runs").glob(f"*/r*/{REDONE_FILE}")):
        attempts = read_json_lines(path)
        if attempts:
            found[f"{path.parent.parent.name}/{path.parent.name}"] = attempts
    return found


def redone_warnings(result) -> list[str]:
    """One warning per cell with runs redone after a measured attempt."""
    cell_of = {run.run: run.cell for run in result.runs}
    by_cell: dict[str, list[str]] = defaultdict(list)
    for run, attempts in redone_attempts(result.results_dir).items():
        cell = cell_of.get(run, run.partition("/")[0])
        last = attempts[-1]
        by_cell[cell].append(f"{run} ({last.get('status', '?')}: {last.get('reason', '')})")
    warnings = []
    for cell, runs in sorted(by_cell.items()):
        shown = ", ".join(runs[:SHOWN]) + (
            f" and {len(runs) - SHOWN} more" if len(runs) > SHOWN else ""
        )
        warnings.append(
            f"`{cell}`: {len(runs)} run{'s' * (len(runs) != 1)} redone after a measured attempt "
            f"(`agentab redo`): {shown}. The table holds the new attempts; redoing only "
            "the runs that failed gives them a second chance the others never had"
        )
    return warnings
