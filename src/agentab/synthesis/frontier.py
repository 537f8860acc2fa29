"""What a cell costs against what it scores: the cost–quality frontier of each rate metric.

Each cell is a point: its median cost per run against its rate of a boolean metric (the value
of cells.csv), both with a 95% interval from `stats.DRAWS` resamples (fixed seed). A cell is on
the (Pareto) frontier when no other cell has a rate at least as high for a cost no higher, one
of the two strictly. The frontier reads a higher rate as the better one.

The cost of a run is its built-in `cost_usd` when every run states a price, else its tokens
(input + output): the offline model costs nothing, and a provider that states no price leaves
tokens as the only common measure. Every run with measures counts (valid, invalid or failed:
each was paid for), where a rate counts the valid runs.

The frontier is drawn through the point estimates; whether a difference between two cells is
established is the gap table's business, and the intervals are there to say how far apart the
points may really be.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from agentab import stats, workers
from agentab.metrics import MEDIAN, RATE
from agentab.stats.seeding import generator_for
from agentab.stats.strata import ALL
from agentab.synthesis.verdicts import ScoredValues, SynthesisResult
from agentab.synthesis.wording import percent, signed

USD = "USD"
TOKENS = "tokens"


@dataclass(frozen=True)
class Point:
    """One cell in one panel: its median cost per run and its rate, with their intervals."""

    cell: str
    cost: float
    cost_low: float
    cost_high: float
    rate: float
    rate_low: float
    rate_high: float
    on_frontier: bool = False
    dominated_by: str = ""  # the cheapest cell that beats it, when it is off the frontier


@dataclass(frozen=True)
class Panel:
    metric: str
    points: list[Point]
    sentences: list[str]


@dataclass(frozen=True)
class Frontier:
    unit: str  # USD or tokens
    why: str  # why this unit, in words
    panels: list[Panel]


def frontier(result: SynthesisResult, scenario) -> Frontier:
    """Every rate metric's panel, the cells in the scenario's order; computed once per
    synthesis (frontier.svg and synthesis.md both read it)."""
    if "frontier" not in result.memo:
        scored = ScoredValues.of(result.runs, scenario.metrics)
        (result.memo["frontier"],) = workers.run_all([frontier_work(result, scenario, scored)])
    return result.memo["frontier"]


def frontier_work(result: SynthesisResult, scenario, scored: ScoredValues) -> workers.Work:
    """The frontier as jobs, each rate metric's intervals one; the costs are read here, before
    the workers start (a worker that walked every run would copy the synthesis's memory)."""
    unit, why = cost_unit(result.runs)
    costs = run_costs(result.runs, unit)
    rates = [
        metric
        for metric, kind in result.metric_types.items()
        if kind.kind == RATE and metric in scenario.metrics
    ]
    values = {metric: cell_rates(result, metric) for metric in rates}
    jobs = [functools.partial(cost_intervals, costs)]
    jobs += [
        functools.partial(rate_intervals, scored, scenario, metric, values[metric])
        for metric in rates
    ]
    weights = [len(scenario.cells)] + [len(scenario.cells) * len(scenario.tasks)] * len(rates)

    def assemble(found: list) -> Frontier:
        cost_of, panels = found[0], []
        for metric, intervals in zip(rates, found[1:], strict=True):
            points = pareto(metric_points(scenario, values[metric], cost_of, intervals))
            if points:
                anchor = scenario.reference
                sentences = frontier_sentences(metric, points, unit, anchor)
                panels.append(Panel(metric, points, sentences))
        return Frontier(unit, why, panels)

    return workers.Work(jobs, weights, assemble)


def cost_unit(runs) -> tuple[str, str]:
    """USD when every run with measures states a price, else tokens; and why, in words."""
    paid = [run for run in runs if run.builtin is not None]
    prices = [(run.builtin or {}).get("cost_usd") for run in paid]
    if paid and all(_number(price) and price > 0 for price in prices):
        return USD, "cost in USD per run, as each run's built-in `cost_usd` states it"
    if any(run.provenance.get("provider") == "offline" for run in paid):
        why = "the offline model costs nothing"
    else:
        why = "not every run states a price"
    return TOKENS, f"cost in tokens per run (input + output): {why}"


def run_costs(runs, unit: str) -> dict[str, list[float]]:
    """Cell -> the cost of each of its runs with measures."""
    costs: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        builtin = run.builtin or {}
        if unit == USD:
            found = builtin.get("cost_usd")
        else:
            tokens = run.provenance.get("tokens") or {}
            parts = [
                builtin.get(f"{side}_tokens", tokens.get(side)) for side in ("input", "output")
            ]
            found = sum(parts) if all(_number(part) for part in parts) else None
        if _number(found):
            costs[run.cell].append(float(found))
    return costs


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def cost_intervals(costs: dict[str, list[float]]) -> dict[str, tuple[float, float, float]]:
    """Cell -> its median cost per run and that median's interval: the same for every rate
    metric's panel, so resampled once."""
    intervals = {}
    for cell, values in costs.items():
        if not values:
            continue
        draws = stats.resample_statistic(
            MEDIAN, values, generator_for(f"frontier\x1fcost\x1f{cell}")
        )
        low, high = stats.percentile_interval(draws)
        intervals[cell] = (stats.statistic(MEDIAN, values), float(low), float(high))
    return intervals


def cell_rates(result, metric: str) -> dict[str, float]:
    """Each cell's pooled rate of the metric (cells.csv's value); None where it has none."""
    return {
        row.cell: row.aggregate.value
        for row in result.cell_values
        if row.metric == metric and row.task == ALL
    }


def rate_intervals(scored: ScoredValues, scenario, metric: str, values: dict) -> dict:
    """Each cell with a rate (`values`: `cell_rates`): the 95% interval of its resampled rates."""
    tasks = [task.name for task in scenario.tasks] if len(scenario.tasks) > 1 else [None]
    cells = [cell.name for cell in scenario.cells if values.get(cell.name) is not None]
    return {
        cell: stats.percentile_interval(pooled_rate_draws(scored, metric, cell, tasks))
        for cell in cells
    }


def metric_points(scenario, values: dict, costs: dict, intervals: dict) -> list[Point]:
    """`values`: each cell's rate (`cell_rates`), `costs`: its `cost_intervals`, `intervals`:
    its `rate_intervals`."""
    points = []
    for cell in scenario.cells:
        if values.get(cell.name) is None or cell.name not in costs:
            continue
        cost, cost_low, cost_high = costs[cell.name]
        rate_low, rate_high = intervals[cell.name]
        points.append(
            Point(
                cell=cell.name,
                cost=cost,
                cost_low=cost_low,
                cost_high=cost_high,
                rate=float(values[cell.name]),
                rate_low=float(rate_low),
                rate_high=float(rate_high),
            )
        )
    return points


def pooled_rate_draws(scored: ScoredValues, metric: str, cell: str, tasks: list) -> np.ndarray:
    """Resampled rates of a cell: of all its valid runs with one task, else the equal-weight
    mean of each task's resampled rate (as the cell's value is pooled)."""
    per_task = []
    for task in tasks:
        found = scored.get(cell, metric) if task is None else scored.of_task(cell, metric, task)
        key = rate_stream_key(metric, cell, task)
        per_task.append(stats.resample_statistic(RATE, found, generator_for(key)))
    return np.mean(per_task, axis=0)


def rate_stream_key(metric: str, cell: str, task: str | None) -> str:
    return f"frontier\x1f{metric}\x1f{cell}\x1f{task or ''}"


def pareto(points: list[Point]) -> list[Point]:
    """The points, each marked on the frontier or dominated (by the cheapest that beats it)."""
    marked = []
    for point in points:
        beaten_by = min(
            (other for other in points if dominates(other, point)),
            key=lambda other: (other.cost, -other.rate),
            default=None,
        )
        marked.append(
            dataclasses.replace(
                point,
                on_frontier=beaten_by is None,
                dominated_by=beaten_by.cell if beaten_by else "",
            )
        )
    return marked


def dominates(one: Point, other: Point) -> bool:
    """A rate at least as high for a cost no higher, one of them strictly."""
    return (
        one.cost <= other.cost
        and one.rate >= other.rate
        and (one.cost < other.cost or one.rate > other.rate)
    )


def frontier_sentences(metric: str, points: list[Point], unit: str, reference: str) -> list[str]:
    """The frontier named in words: each cell on it against the reference (or the cheapest cell
    on it, when the reference has no point), then the cells off it."""
    by_cell = {point.cell: point for point in points}
    on = sorted((p for p in points if p.on_frontier), key=lambda p: (p.cost, -p.rate))
    anchor = by_cell.get(reference) or on[0]
    named = f"`{anchor.cell}`" + (" (the reference)" if anchor.cell == reference else "")
    lines = []
    for point in on:
        if point is anchor:
            lines.append(
                f"{named} is on the frontier: {percent(point.rate)} {metric} at "
                f"{amount(point.cost, unit)} per run"
            )
        else:
            lines.append(
                f"`{point.cell}` is on the frontier: {signed(point.rate - anchor.rate)} "
                f"{metric} {cost_change(point.cost, anchor.cost, unit)} against {named}"
            )
    for point in points:
        if not point.on_frontier:
            lines.append(
                f"`{point.cell}` is off it: `{point.dominated_by}` has a rate as high or "
                f"higher ({percent(by_cell[point.dominated_by].rate)} against "
                f"{percent(point.rate)}) for no more {unit_word(unit)}"
            )
    return lines


def cost_change(cost: float, base: float, unit: str) -> str:
    """`for +12% tokens`; against a base of 0, the difference itself."""
    if base == 0:
        return f"for {amount(cost - base, unit, with_sign=True)}"
    change = f"{100 * (cost - base) / base:+.0f}"
    if float(change) == 0:
        return "at the same cost"
    return f"for {change}% {unit_word(unit)}"


def amount(value: float, unit: str, with_sign: bool = False) -> str:
    sign = "+" if with_sign and value > 0 else ""
    if unit == USD:
        return f"{sign}{value:.4g} USD"
    return f"{sign}{value:,.0f}".replace(",", "\u202f") + " tokens"


def unit_word(unit: str) -> str:
    return "USD" if unit == USD else "tokens"
