"""Power: how many repetitions a gap needs before the verdict can establish it.

From pilot data (a results folder), by simulation under the very rule of the synthesis: the
pilot runs are taken as the truth, experiments of n repetitions per cell are drawn from them, each
is judged with the same bootstrap (``stats.DRAWS`` draws, 95% percentile interval, established
if it excludes 0), and the answer is the smallest n of a ladder at which the share of established
verdicts reaches the wanted power.

With several tasks, a simulated experiment has n repetitions per cell in every task, each drawn
from that task's own pilot runs, and is judged by the pooled rule (`strata.pooled_gap_verdict`,
the stratified shuffles, and the minimums per task and per cell): n is then repetitions per cell
and task, as `[protocol] repetitions` counts them.

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

from agentab import stats
from agentab.errors import AgentabError, problem
from agentab.layout import ResultsFolder
from agentab.metrics import MEDIAN, RATE
from agentab.stats import resampling, strata
from agentab.synthesis.runs.results import load_frozen_scenario, read_runs
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
NEEDS_TWO_PER_TASK = "needs at least 2 valid pilot runs of each cell in each task"
NO_PILOT_GAP = "the pilot shows no gap; pass --gap to plan for a size"


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
    tasks = [task.name for task in scenario.tasks]
    if len(tasks) > 1:
        return tasks_power_rows(scored, types, scenario, chosen, tasks, gap, settings)
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
            note=NO_PILOT_GAP,
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


# Several tasks: n repetitions per cell in every task, judged by the pooled rule.


def tasks_power_rows(scored, types, scenario, chosen, tasks, gap, settings) -> list[PowerRow]:
    """The rows of `repetitions_needed` for a scenario with several tasks: each task's pilot
    runs are that task's truth."""
    reference = scenario.reference
    rows = []
    for metric in chosen:
        kind = types[metric].kind
        if kind not in (RATE, MEDIAN):
            continue
        theirs = [scored.of_task(reference, metric, task) for task in tasks]
        if gap is not None:
            rows.append(_tasks_given_gap(metric, kind, reference, theirs, tasks, gap, settings))
            continue
        for cell in scenario.cells:
            if cell.name != reference:
                mine = [scored.of_task(cell.name, metric, task) for task in tasks]
                rows.append(
                    _tasks_pilot_gap(metric, kind, cell.name, reference, mine, theirs, settings)
                )
    return rows


def _tasks_given_gap(metric, kind, reference, theirs, tasks, gap, settings) -> PowerRow:
    base = dict(
        metric=metric, kind=kind, cell="", reference=reference, pilot_n_cell=0,
        pilot_n_ref=sum(map(len, theirs)), gap=gap,
    )  # fmt: skip
    if min(map(len, theirs)) < 2:
        return PowerRow(**base, repetitions=None, power=None, note=NEEDS_TWO_PER_TASK)
    if gap == 0:
        return PowerRow(
            **base, repetitions=None, power=None, note="a gap of 0 is never established"
        )
    reference_tasks = [population(kind, values) for values in theirs]
    cell_tasks = [population(kind, values, shift=gap) for values in theirs]
    capped = [task for task, pop in zip(tasks, cell_tasks, strict=True) if not 0 <= pop.rate <= 1]
    if kind == RATE and capped:
        cell_tasks = [
            Population(RATE, pop.values, min(1.0, max(0.0, pop.rate))) for pop in cell_tasks
        ]
    repetitions, power = smallest_repetitions_over_tasks(
        cell_tasks, reference_tasks, f"{metric}\x1fgap {gap!r}\x1ftasks", **settings
    )
    note = (
        f"the rate is capped at {'1' if gap > 0 else '0'} in {', '.join(capped)}"
        if kind == RATE and capped
        else ""
    )
    return PowerRow(**base, repetitions=repetitions, power=power, note=note)


def _tasks_pilot_gap(metric, kind, cell, reference, mine, theirs, settings) -> PowerRow:
    base = dict(
        metric=metric, kind=kind, cell=cell, reference=reference,
        pilot_n_cell=sum(map(len, mine)), pilot_n_ref=sum(map(len, theirs)),
    )  # fmt: skip
    if min(map(len, mine + theirs)) < 2:
        return PowerRow(
            **base, gap=float("nan"), repetitions=None, power=None, note=NEEDS_TWO_PER_TASK
        )
    scale = strata.scale_of(kind, [value for values in mine + theirs for value in values])
    observed = strata.pooled_statistic(kind, mine, scale) - strata.pooled_statistic(
        kind, theirs, scale
    )
    if observed == 0:
        return PowerRow(**base, gap=observed, repetitions=None, power=None, note=NO_PILOT_GAP)
    repetitions, power = smallest_repetitions_over_tasks(
        [population(kind, values) for values in mine],
        [population(kind, values) for values in theirs],
        f"{metric}\x1f{cell}\x1ftasks",
        **settings,
    )
    return PowerRow(**base, gap=observed, repetitions=repetitions, power=power)


def smallest_repetitions_over_tasks(
    cell: list[Population],
    reference: list[Population],
    key: str,
    *,
    power: float,
    max_repetitions: int,
    simulations: int,
    draws: int,
) -> tuple[int | None, float | None]:
    """The first n of the ladder (repetitions per cell and task) whose simulated power under
    the pooled rule reaches `power`, and that power."""
    reached = None
    for n in [size for size in LADDER if size <= max_repetitions] or [max_repetitions]:
        rng = resampling.generator_for(f"plan\x1f{key}\x1f{n}")
        reached = simulated_power_over_tasks(cell, reference, n, rng, simulations, draws)
        if reached >= power:
            return n, reached
    return None, reached


def simulated_power_over_tasks(
    cell: list[Population],
    reference: list[Population],
    n: int,
    rng: np.random.Generator,
    simulations: int = DEFAULT_SIMULATIONS,
    draws: int = stats.DRAWS,
) -> float:
    """Share of simulated experiments (n runs per cell and task) whose pooled gap is
    established: below the rule's minimums, none is."""
    tasks = len(cell)
    if n < stats.MIN_RUNS_PER_TASK or n * tasks < stats.MIN_RUNS_PER_GROUP:
        return 0.0
    kind = cell[0].kind
    established = 0
    for index in range(simulations):
        mine = [_sample(pop, n, rng) for pop in cell]
        theirs = [_sample(pop, n, rng) for pop in reference]
        scale = strata.scale_of(kind, [value for values in mine + theirs for value in values])
        key = f"plan\x1f{index}\x1f{rng.integers(2**62)}"
        verdict = strata.pooled_gap_verdict(kind, scale, mine, theirs, key, draws)
        established += verdict.is_established
    return established / simulations


def _sample(pop: Population, n: int, rng: np.random.Generator) -> list:
    """n runs of a task drawn from its pilot: booleans at the pilot's rate, or the pilot's
    values drawn with replacement."""
    if pop.kind == RATE:
        return (rng.random(n) < pop.rate).tolist()
    return rng.choice(pop.values, size=n, replace=True).tolist()
