"""Power: how many repetitions a gap needs before the verdict can establish it.

From pilot data (a results folder), by simulation under the very rule of the synthesis: the
pilot runs are taken as the truth, experiments of n repetitions per cell are drawn from them, each
is judged with the same bootstrap (``stats.DRAWS`` draws, 95% percentile interval, established
if it excludes 0), and the answer is the smallest n of a ladder at which the share of established
verdicts reaches the wanted power.

Two questions are answered:
- without a gap size: for each cell and metric, the repetitions needed to establish the gap the
  pilot shows (the pilot's own distributions of the cell and of the reference);
- with a gap size: for each metric, the repetitions needed to establish that gap, the cell being
  the reference's pilot shifted by the gap (a rate moves by the gap, a number by the gap).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agentab.errors import AgentabError, problem
from agentab.layout import ResultsFolder
from agentab.metrics import MEDIAN, RATE
from agentab.synthesis import resampling, stats
from agentab.synthesis.results import load_frozen_scenario, read_runs
from agentab.synthesis.verdicts import ScoredValues, decide_metric_types

LADDER = (
    2,
    3,
    4,
    5,
    6,
    8,
    10,
    12,
    15,
    20,
    25,
    30,
    40,
    50,
    60,
    80,
    100,
    120,
    150,
    200,
    250,
    300,
    400,
    500,
    600,
    800,
    1000,
)
DEFAULT_SIMULATIONS = 200


@dataclass(frozen=True)
class PowerRow:
    """The repetitions per cell that make one gap established with the wanted power."""

    metric: str
    kind: str
    cell: str  # "" when the gap size was given rather than read from a pilot cell
    reference: str
    pilot_n_cell: int
    pilot_n_ref: int
    gap: float
    repetitions: int | None  # None: not reached within the ladder up to the maximum
    power: float | None  # the simulated power at `repetitions` (or at the maximum tried)
    note: str = ""


@dataclass(frozen=True)
class Population:
    """What one cell's runs are drawn from in a simulated experiment."""

    kind: str
    values: np.ndarray  # numbers for a median; ignored for a rate
    rate: float = 0.0


def repetitions_needed(
    results_dir: Path,
    *,
    gap: float | None = None,
    power: float = 0.8,
    metrics: list[str] | None = None,
    max_repetitions: int = 200,
    simulations: int = DEFAULT_SIMULATIONS,
    draws: int = stats.DRAWS,
) -> list[PowerRow]:
    """Repetitions per cell for each gap of a pilot (or for a gap of the given size)."""
    if not 0 < power < 1:
        raise AgentabError(
            problem(
                "--power",
                "power",
                f"{power} is not between 0 and 1",
                "pass a probability such as 0.8",
            )
        )
    results_dir = Path(results_dir)
    scenario = load_frozen_scenario(results_dir)
    runs, _ = read_runs(results_dir, scenario)
    scored = ScoredValues.of(runs, scenario.metrics)
    types = decide_metric_types(scored, scenario)
    chosen = _chosen_metrics(scenario, metrics, results_dir)
    settings = dict(
        power=power, max_repetitions=max_repetitions, simulations=simulations, draws=draws
    )
    rows = []
    for metric in chosen:
        kind = types[metric].kind
        if kind not in (RATE, MEDIAN):
            continue
        reference_values = scored.get(scenario.reference, metric)
        if gap is not None:
            rows.append(
                _power_given_gap(metric, kind, scenario.reference, reference_values, gap, settings)
            )
            continue
        for cell in scenario.cells:
            if cell.name != scenario.reference:
                cell_values = scored.get(cell.name, metric)
                rows.append(
                    _power_pilot_gap(
                        metric,
                        kind,
                        cell.name,
                        scenario.reference,
                        cell_values,
                        reference_values,
                        settings,
                    )
                )
    return rows


def _chosen_metrics(scenario, metrics: list[str] | None, results_dir: Path) -> list[str]:
    if not metrics:
        return list(scenario.metrics)
    unknown = [metric for metric in metrics if metric not in scenario.metrics]
    if unknown:
        raise AgentabError(
            problem(
                ResultsFolder(results_dir).frozen_scenario,
                "validation.metrics",
                f"no metric named {', '.join(unknown)} in the contract",
                f"use one of: {', '.join(scenario.metrics)}",
            )
        )
    return metrics


def population(kind: str, values: list, shift: float = 0.0) -> Population:
    if kind == RATE:
        return Population(kind, np.empty(0), rate=sum(1 for v in values if v) / len(values) + shift)
    return Population(kind, np.asarray(values, dtype=float) + shift)


def _power_given_gap(metric, kind, reference, reference_values, gap, settings) -> PowerRow:
    base = dict(
        metric=metric,
        kind=kind,
        cell="",
        reference=reference,
        pilot_n_cell=0,
        pilot_n_ref=len(reference_values),
        gap=gap,
    )
    if len(reference_values) < 2:
        return PowerRow(
            **base,
            repetitions=None,
            power=None,
            note="needs at least 2 valid pilot runs of the reference",
        )
    reference = population(kind, reference_values)
    cell = population(kind, reference_values, shift=gap)
    if kind == RATE and not 0 <= cell.rate <= 1:
        return PowerRow(
            **base,
            repetitions=None,
            power=None,
            note=f"a rate of {reference.rate:.3g} cannot move by {gap:+g}",
        )
    if gap == 0:
        return PowerRow(
            **base, repetitions=None, power=None, note="a gap of 0 is never established"
        )
    repetitions, power = smallest_repetitions(
        cell, reference, f"{metric}\x1fgap {gap!r}", **settings
    )
    return PowerRow(**base, repetitions=repetitions, power=power)


def _power_pilot_gap(metric, kind, cell, reference, cell_values, reference_values, settings):
    base = dict(
        metric=metric,
        kind=kind,
        cell=cell,
        reference=reference,
        pilot_n_cell=len(cell_values),
        pilot_n_ref=len(reference_values),
    )
    if len(cell_values) < 2 or len(reference_values) < 2:
        return PowerRow(
            **base,
            gap=float("nan"),
            repetitions=None,
            power=None,
            note="needs at least 2 valid pilot runs in the cell and the reference",
        )
    observed = resampling.statistic(kind, cell_values) - resampling.statistic(
        kind, reference_values
    )
    if observed == 0:
        return PowerRow(
            **base,
            gap=observed,
            repetitions=None,
            power=None,
            note="the pilot shows no gap; pass --gap to plan for a size",
        )
    repetitions, power = smallest_repetitions(
        population(kind, cell_values),
        population(kind, reference_values),
        f"{metric}\x1f{cell}",
        **settings,
    )
    return PowerRow(**base, gap=observed, repetitions=repetitions, power=power)


def smallest_repetitions(
    cell: Population,
    reference: Population,
    key: str,
    *,
    power: float,
    max_repetitions: int,
    simulations: int,
    draws: int,
) -> tuple[int | None, float | None]:
    """The first n of the ladder whose simulated power reaches `power`, and that power."""
    reached = None
    for n in [size for size in LADDER if size <= max_repetitions] or [max_repetitions]:
        # The stream's name predates this module's; renaming it would change every draw.
        rng = resampling.generator_for(f"plan\x1f{key}\x1f{n}")
        reached = simulated_power(cell, reference, n, rng, simulations=simulations, draws=draws)
        if reached >= power:
            return n, reached
    return None, reached


def simulated_power(
    cell: Population,
    reference: Population,
    n: int,
    rng: np.random.Generator,
    *,
    simulations: int = DEFAULT_SIMULATIONS,
    draws: int = stats.DRAWS,
) -> float:
    """Share of simulated experiments (n runs per cell) whose gap the rule establishes."""
    if cell.kind == RATE:
        return _rate_power(cell.rate, reference.rate, n, rng, simulations, draws)
    established = 0
    for _ in range(simulations):
        cell_sample = rng.choice(cell.values, size=n, replace=True)
        reference_sample = rng.choice(reference.values, size=n, replace=True)
        gap_draws = resampling.resample_statistic(MEDIAN, cell_sample, rng, draws) - (
            resampling.resample_statistic(MEDIAN, reference_sample, rng, draws)
        )
        gap = resampling.statistic(MEDIAN, cell_sample) - resampling.statistic(
            MEDIAN, reference_sample
        )
        established += stats.verdict_from_draws(gap, gap_draws).is_established
    return established / simulations


def _rate_power(p_cell, p_reference, n, rng, simulations, draws) -> float:
    # Whole experiments at once: the observed counts, then each experiment's bootstrap,
    # both binomial for the same reason as in `resampling.resample_statistic`.
    k_cell = rng.binomial(n, p_cell, size=simulations)
    k_reference = rng.binomial(n, p_reference, size=simulations)
    boot_cell = rng.binomial(n, (k_cell / n)[:, None], size=(simulations, draws)) / n
    boot_reference = rng.binomial(n, (k_reference / n)[:, None], size=(simulations, draws)) / n
    tail = (1 - stats.CONFIDENCE) / 2 * 100
    low, high = np.percentile(boot_cell - boot_reference, [tail, 100 - tail], axis=1)
    return float(np.mean((low > 0) | (high < 0)))
