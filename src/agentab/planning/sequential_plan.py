"""Planning a sequential scenario: for a gap of a given size (or each cell's pilot gap), how
many runs a cell is expected to make before the gap is decided, and how often it is decided
by the maximum, under the very rule of the synthesis.

Experiments are simulated from pilot data (a results folder), as `power` does for the fixed
rule: a rate's runs at the pilot's rate (the cell's: moved by the gap), a number's drawn with
replacement from the pilot's values (the cell's: moved by the gap). Each experiment runs waves of
the scenario's `wave` runs per cell (and task), up to its `repetitions`, and is judged after
every wave by `sequential.crossings`, the function the synthesis's sequences are built on.
With several tasks the pilot's values are pooled over its tasks (each wave draws a wave of runs
per task from the pool): the tasks' differences are not simulated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agentab.metrics import MEDIAN, RATE
from agentab.planning.power import NO_PILOT_GAP, Population, _chosen_metrics, population
from agentab.stats import resampling, sequential
from agentab.synthesis.runs.results import load_frozen_scenario, read_runs
from agentab.synthesis.verdicts import ScoredValues, decide_metric_types

SIMULATIONS = 2000


@dataclass(frozen=True)
class SequentialRow:
    """Runs per cell (and task) to a decision of one gap under the sequential rule."""

    metric: str
    kind: str
    cell: str  # "" when the gap size was given
    reference: str
    gap: float
    decided: float | None  # the share of experiments decided by the maximum
    mean_runs: float | None  # runs per cell and task at the decision, or at the maximum
    median_runs: float | None
    note: str = ""


def sequential_plan(
    results_dir: Path,
    *,
    gap: float | None = None,
    metrics: list[str] | None = None,
    simulations: int = SIMULATIONS,
) -> list[SequentialRow]:
    """A row per metric (a given gap) or per cell and metric (each pilot gap)."""
    results_dir = Path(results_dir)
    scenario = load_frozen_scenario(results_dir)
    runs, _ = read_runs(results_dir, scenario)
    scored = ScoredValues.of(runs, scenario.metrics)
    types = decide_metric_types(scored, scenario)
    shape = (scenario.wave, scenario.repetitions, max(1, len(scenario.tasks)))
    rows = []
    for metric in _chosen_metrics(scenario, metrics, results_dir):
        kind = types[metric].kind
        if kind not in (RATE, MEDIAN):
            continue
        theirs = scored.get(scenario.reference, metric)
        others = [cell.name for cell in scenario.cells if cell.name != scenario.reference]
        pairs = [("", [])] if gap is not None else [(c, scored.get(c, metric)) for c in others]
        for cell, mine in pairs:
            rows.append(
                plan_row(
                    metric, kind, cell, scenario.reference, mine, theirs, gap, shape, simulations
                )
            )
    return rows


def plan_row(metric, kind, cell, reference, mine, theirs, gap, shape, simulations) -> SequentialRow:
    def row(size: float, note: str = "", outcome=(None, None, None)) -> SequentialRow:
        decided, mean_runs, median_runs = outcome
        return SequentialRow(
            metric, kind, cell, reference, size, decided, mean_runs, median_runs, note
        )

    if len(theirs) < 2 or (gap is None and len(mine) < 2):
        where = "in the cell and the reference" if gap is None else "of the reference"
        return row(float("nan"), f"needs at least 2 valid pilot runs {where}")
    reference_pop = population(kind, theirs)
    if gap is None:
        size = resampling.statistic(kind, mine) - resampling.statistic(kind, theirs)
        cell_pop = population(kind, mine)
    else:
        size, cell_pop = gap, population(kind, theirs, shift=gap)
    if kind == RATE and not 0 <= cell_pop.rate <= 1:
        return row(size, f"a rate of {reference_pop.rate:.3g} cannot move by {gap:+g}")
    if size == 0:
        return row(size, NO_PILOT_GAP if gap is None else "a gap of 0 is never established")
    rng = resampling.generator_for(f"plan sequential\x1f{metric}\x1f{cell}\x1f{size!r}")
    decided, runs = simulate(cell_pop, reference_pop, shape, simulations, rng)
    return row(size, "", (float(decided.mean()), float(runs.mean()), float(np.median(runs))))


def draw(pop: Population, size: tuple, rng: np.random.Generator) -> np.ndarray:
    if pop.kind == RATE:
        return (rng.random(size) < pop.rate).astype(float)
    return rng.choice(pop.values, size=size, replace=True)


def simulate(cell: Population, reference: Population, shape, simulations: int, rng):
    """(decided by the maximum, runs per cell and task at the decision) per experiment."""
    wave, most, tasks = shape
    d = sequential.pair_values(
        cell.kind,
        draw(cell, (simulations, most * tasks), rng),
        draw(reference, (simulations, most * tasks), rng),
    )
    waves = most // wave
    ends = [k * wave * tasks for k in range(1, waves + 1)]
    crossed = sequential.crossings(d, ends, horizon=most * tasks)
    decided = crossed.any(axis=-1)
    first = np.where(decided, crossed.argmax(axis=-1) + 1, waves)
    return decided, first * wave
