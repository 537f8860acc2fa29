"""The workflow's side of sequential stopping: which cells a wave holds, from the decision the
checkpoint after the wave before wrote, and which runs a results folder is expected to hold.

A decision file is the checkpoint's output (`agentab.steps.decide_wave`); the decisions
themselves follow from the runs alone (`agentab.synthesis.waves.replay_waves`). So a decision
file that cannot be read is no dead end: the cells are replayed from the measures instead, and
the start of a workflow removes the file (with the decisions after it), to be written again.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentab.layout import ResultsFolder


def read_decision(path: Path) -> list[str] | None:
    """The cells a decision file gives the next wave; None when it is unreadable or malformed."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cells = data.get("next") if isinstance(data, dict) else None
    if not isinstance(cells, list) or not all(isinstance(cell, str) for cell in cells):
        return None
    return cells


def next_wave_cells(workflow, scenario: str, wave: int, decision: Path) -> list[str]:
    """The cells that get `wave` after the decision of the wave before (`decision`)."""
    cells = read_decision(decision)
    if cells is not None:
        return cells
    plan = replay(workflow, scenario, through=wave - 1)
    return plan.next_wave_cells()


def replay(workflow, scenario: str, through: int | None = None):
    from agentab.synthesis.waves import replay_results  # late: the synthesis's imports

    return replay_results(
        workflow.layout.results(scenario).path, workflow.scenarios[scenario], through
    )


def expected_reps(workflow, scenario: str) -> dict[str, int]:
    """Each cell's runs (per task) that the results folder is expected to hold: `repetitions`,
    or with waves the runs of the waves each cell was given so far."""
    sc = workflow.scenarios[scenario]
    if not sc.sequential or not workflow.layout.results(scenario).path.is_dir():
        first = sc.wave if sc.sequential else sc.repetitions
        return {cell.name: first for cell in sc.cells}
    return replay(workflow, scenario).runs_given_by_cell(sc.cells)


def bad_decisions(results: ResultsFolder, most: int) -> list[Path]:
    """The decision files from the first unreadable one on: each later one followed from it."""
    for wave in range(1, most + 1):
        path = results.wave_decision(wave)
        if path.exists() and read_decision(path) is None:
            later = [results.wave_decision(k) for k in range(wave, most + 1)]
            return [found for found in later if found.exists()]
    return []


def repair_decisions(workflow, dry: bool) -> list[str]:
    """Remove each sequential scenario's unreadable decision files (and those after them), so
    that their checkpoints decide again; the lines to tell the person."""
    lines = []
    for name, scenario in workflow.scenarios.items():
        if not scenario.sequential:
            continue
        bad = bad_decisions(workflow.layout.results(name), scenario.waves)
        if not bad:
            continue
        first = bad[0].stem.removeprefix("wave-")
        verb = "would be decided again" if dry else "are decided again"
        lines.append(
            f"agentab: {name}: the decision after wave {first} is unreadable ({bad[0]}); it and "
            f"the {len(bad) - 1} after it {verb} from the runs' measures"
        )
        if not dry:
            # Without its outputs the synthesis is due: Snakemake leaves a finished synthesis
            # alone even when a checkpoint it was built after has lost its output.
            results = workflow.layout.results(name)
            for path in [*bad, *results.outputs()]:
                path.unlink(missing_ok=True)
    return lines
