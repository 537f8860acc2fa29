"""`agentab plan RESULTS_DIR`: repetitions per cell needed to establish a gap, from pilot data."""

from __future__ import annotations

import math
from pathlib import Path

from agentab import stats
from agentab.budget import usd
from agentab.errors import AgentabError, problem
from agentab.metrics import MEDIAN, RATE
from agentab.planning.label_plan import DEFAULT_DISAGREEMENT, label_plans, render_label_plans
from agentab.planning.power import DEFAULT_SIMULATIONS, PowerRow, repetitions_needed
from agentab.planning.sequential_plan import SIMULATIONS, SequentialRow, sequential_plan
from agentab.synthesis.runs.results import load_frozen_scenario, read_runs
from agentab.synthesis.verdicts import ScoredValues, decide_metric_types

# A pilot rate of 50% from 20 runs has a 95% Wilson interval of about 30-70%: ±20 pp.
ROUGH_PILOT_BELOW = 20


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="repetitions per cell needed to establish a gap, simulated from pilot runs",
        description=(
            "Read the pilot runs of RESULTS_DIR and tell, per metric, how many repetitions per "
            "cell make a gap established with the given probability under the synthesis's own "
            "rule (95% bootstrap interval excluding 0), by simulating whole experiments from "
            "the pilot. Without --gap: for each cell, the gap the pilot shows. With --gap: a gap "
            "of that size against the reference (a proportion for a rate, e.g. 0.2; the "
            "metric's unit for a median, e.g. 2 turns)."
        ),
    )
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR", help="e.g. results/demo")
    parser.add_argument(
        "--gap",
        action="append",
        default=[],
        metavar="[METRIC=]SIZE",
        help="the gap to plan for, per metric in its own unit (ran_tests=0.2, turns=2; "
        "repeatable); a bare SIZE applies to the --metric chosen, else to every rate "
        "(default: the gap each cell's pilot shows)",
    )
    parser.add_argument(
        "--power", type=float, default=0.8, help="wanted probability of an established verdict"
    )
    parser.add_argument(
        "--metric", action="append", dest="metrics", help="plan only this metric (repeatable)"
    )
    parser.add_argument(
        "--max-repetitions", type=int, default=200, help="largest repetition count tried"
    )
    parser.add_argument(
        "--simulations",
        type=int,
        default=DEFAULT_SIMULATIONS,
        help="simulated experiments per repetition count (more: steadier, slower)",
    )
    parser.add_argument(
        "--label-width",
        type=float,
        metavar="W",
        help="instead: how many labels a form that checks a judge needs for each cell's "
        "corrected rate to have a 95%% interval at most W wide (0.2 = 20 pp)",
    )
    parser.add_argument(
        "--disagreement",
        type=float,
        default=DEFAULT_DISAGREEMENT,
        help="with --label-width, before any label is filled: the assumed share of runs "
        "where the person and the judge differ (default %(default)s)",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    if args.label_width is not None:  # the judge checked against people: labels, not runs
        print(
            render_label_plans(label_plans(args.results_dir, args.label_width, args.disagreement))
        )
        return 0
    sizes = gap_sizes(args.results_dir, args.gap, args.metrics)
    scenario = load_frozen_scenario(args.results_dir)
    if scenario.sequential:
        print(render_sequential(scenario, sequential_rows(args.results_dir, sizes, args.metrics)))
        return 0
    settings = dict(
        power=args.power, max_repetitions=args.max_repetitions, simulations=args.simulations
    )
    if sizes is None:
        rows = repetitions_needed(args.results_dir, gap=None, metrics=args.metrics, **settings)
    else:
        rows = [
            row
            for metric, size in sizes.items()
            for row in repetitions_needed(args.results_dir, gap=size, metrics=[metric], **settings)
        ]
    cost = planned_cost(args.results_dir, rows)
    tasks = task_names(args.results_dir)
    print(render(rows, args.power, args.max_repetitions, args.simulations, cost, tasks))
    return 0


def sequential_rows(results_dir: Path, sizes, metrics) -> list[SequentialRow]:
    if sizes is None:
        return sequential_plan(results_dir, metrics=metrics)
    return [
        row
        for metric, size in sizes.items()
        for row in sequential_plan(results_dir, gap=size, metrics=[metric])
    ]


def render_sequential(scenario, rows: list[SequentialRow]) -> str:
    """The expected runs to a decision of each gap, at the scenario's waves and maximum."""
    per = " and task" if len(scenario.tasks) > 1 else ""
    head = (
        f"runs per cell{per} to a decision under sequential stopping: waves of {scenario.wave}, "
        f"at most {scenario.repetitions} ({scenario.waves} waves), judged after every wave by "
        f"the synthesis's confidence sequence ({SIMULATIONS} simulated experiments per gap)"
    )
    lines = [head, ""]
    if not rows:
        return "\n".join(lines + ["no scored metric with pilot values to plan from"])
    header = ("metric", "cell", "gap", "decided by the maximum", "runs (mean)", "runs (median)")
    table = [header]
    for row in rows:
        table.append(
            (
                row.metric,
                row.cell or f"(any) vs {row.reference}",
                "-" if math.isnan(row.gap) else _gap_text(row),
                row.note or f"{row.decided:.0%}",
                "" if row.mean_runs is None else f"{row.mean_runs:.1f} of {scenario.repetitions}",
                "" if row.median_runs is None else f"{row.median_runs:g}",
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        cells = (text.ljust(width) for text, width in zip(line, widths, strict=True))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(
        lines
        + [
            "",
            "A gap not decided by the maximum is inconclusive; its cell makes every run up to "
            "it. Runs (mean) counts each cell's runs to its decision or to the maximum.",
        ]
    )


def task_names(results_dir: Path) -> list[str]:
    """The tasks of a scenario with several; [] with one (named or not)."""
    names = [task.name for task in load_frozen_scenario(results_dir).tasks]
    return names if len(names) > 1 else []


def run_cost(record) -> float | None:
    """A pilot run's cost: its built-in `cost_usd` (the harness's figure, or its tokens ×
    a price), else its provenance's."""
    for value in ((record.builtin or {}).get("cost_usd"), record.provenance.get("cost_usd")):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def planned_cost(results_dir: Path, rows: list[PowerRow]) -> list[str]:
    """What the planned repetitions would cost, at each cell's mean cost per run in the pilot
    (every run measured counts: a failed run was paid for too)."""
    planned = [row.repetitions for row in rows if row.repetitions is not None]
    if not planned:
        return []
    repetitions = max(planned)
    scenario = load_frozen_scenario(results_dir)
    runs, _ = read_runs(results_dir, scenario)
    costs: dict[str, list[float]] = {}
    for record in runs:
        if (cost := run_cost(record)) is not None:
            costs.setdefault(record.cell, []).append(cost)
    every = [cost for found in costs.values() for cost in found]
    if not every or not any(every):
        return [
            "",
            "cost: the pilot's runs state no cost (the offline model costs nothing unless its "
            "policy sets a price), so the planned runs cannot be priced from them.",
        ]
    overall = sum(every) / len(every)
    means = [
        sum(costs[cell.name]) / len(costs[cell.name]) if costs.get(cell.name) else overall
        for cell in scenario.cells
    ]
    tasks = len(scenario.tasks) if len(scenario.tasks) > 1 else 1
    total = repetitions * tasks * sum(means)
    count = repetitions * tasks * len(scenario.cells)
    cells = len(scenario.cells)
    per_task = f" × {tasks} tasks" if tasks > 1 else ""
    spread = f"{usd(min(means))} to {usd(max(means))}" if len(set(means)) > 1 else usd(means[0])
    return [
        "",
        f"cost: {repetitions} repetitions × {cells} cell{'s' * (cells != 1)}{per_task} = "
        f"{count} runs ≈ "
        f"{usd(total)} USD, at each cell's mean cost per run in the pilot ({spread} USD, from "
        f"{len(every)} runs with a cost); the pilot's own runs cost {usd(sum(every))} USD. "
        "Set [protocol] budget_usd in the scenario to cap it.",
    ]


def gap_sizes(results_dir: Path, given: list[str], metrics: list[str] | None):
    """Each metric's gap to plan for, in its own unit; None to plan each cell's pilot gap.

    A bare size is a proportion for a rate and a count of turns for `turns`: the same number
    means nothing across metrics, so without --metric it applies to the rates alone."""
    if not given:
        return None
    sizes: dict[str, float] = {}
    bare = None
    for text in given:
        name, _, size = text.rpartition("=")
        try:
            value = float(size)
        except ValueError:
            raise AgentabError(
                problem(
                    "--gap",
                    "",
                    f"{text!r} is not a size",
                    "write --gap 0.2 or --gap METRIC=SIZE, e.g. --gap ran_tests=0.2 --gap turns=2",
                )
            ) from None
        if name:
            sizes[name] = value
        else:
            bare = value
    if bare is not None:
        rates, medians = metrics_by_kind(results_dir)
        for metric in metrics or rates:
            sizes.setdefault(metric, bare)
        left_out = [metric for metric in medians if metric not in sizes]
        if left_out:
            named = " ".join(f"--gap {metric}=SIZE" for metric in left_out)
            print(f"not planned: {', '.join(left_out)}, in units of their own ({named})")
    return sizes


def metrics_by_kind(results_dir: Path) -> tuple[list[str], list[str]]:
    """The scenario's rate metrics and its median metrics, as the pilot's values type them."""
    scenario = load_frozen_scenario(results_dir)
    runs, _ = read_runs(results_dir, scenario)
    types = decide_metric_types(ScoredValues.of(runs, scenario.metrics), scenario)
    kinds = {metric: types[metric].kind for metric in scenario.metrics}
    return (
        [metric for metric, kind in kinds.items() if kind == RATE],
        [metric for metric, kind in kinds.items() if kind == MEDIAN],
    )


def render(
    rows: list[PowerRow],
    power: float,
    max_repetitions: int,
    simulations: int,
    cost=(),
    tasks: list[str] = (),
) -> str:
    if tasks:
        head = (
            f"repetitions per cell and task for a {power:.0%} chance of an established pooled "
            f"gap over the {len(tasks)} tasks ({', '.join(tasks)}), each task drawn from its "
            f"own pilot runs ({simulations} simulated experiments per size, {stats.DRAWS} "
            "stratified shuffles each)"
        )
    else:
        head = (
            f"repetitions per cell for a {power:.0%} chance of an established gap "
            f"({simulations} simulated experiments per size, {stats.DRAWS} bootstrap draws each)"
        )
    lines = [head, ""]
    if not rows:
        return "\n".join(lines + ["no scored metric with pilot values to plan from"])
    header = ("metric", "cell", "pilot n", "gap", "repetitions", "power")
    table = [header]
    for row in rows:
        table.append(
            (
                row.metric,
                row.cell or f"(any) vs {row.reference}",
                f"{row.pilot_n_cell}/{row.pilot_n_ref}" if row.cell else str(row.pilot_n_ref),
                _gap_text(row),
                _repetitions_text(row, max_repetitions),
                "" if row.power is None else f"{row.power:.2f}",
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        cells = (text.ljust(width) for text, width in zip(line, widths, strict=True))
        lines.append("  ".join(cells).rstrip())
    notes = [f"{row.metric}: {row.note}" for row in rows if row.note and row.repetitions]
    lines += ["", *notes] if notes else []
    return "\n".join(lines + list(cost) + pilot_caution(rows, per_task=bool(tasks)))


def pilot_caution(rows: list[PowerRow], per_task: bool = False) -> list[str]:
    """Say from how many runs the estimates came, and that a small pilot makes them rough."""
    sizes = [n for row in rows for n in (row.pilot_n_ref, row.pilot_n_cell) if n]
    if not sizes:
        return []
    smallest, largest = min(sizes), max(sizes)
    counted = f"{smallest}" if smallest == largest else f"{smallest} to {largest}"
    over = " over all its tasks (each task's runs are that task's pilot)" if per_task else ""
    line = f"pilot: these estimates come from {counted} valid runs per cell{over}"
    if smallest >= ROUGH_PILOT_BELOW:
        return ["", line + "."]
    return [
        "",
        f"{line}: rough. Below {ROUGH_PILOT_BELOW} runs a pilot knows a rate only to about "
        "±20 pp or worse (and a median no better), so the repetitions above may be far off; "
        "a larger pilot gives a firmer answer.",
    ]


def _gap_text(row: PowerRow) -> str:
    if math.isnan(row.gap):
        return "-"
    return f"{100 * row.gap:+.3g} pp" if row.kind == RATE else f"{row.gap:+.4g}"


def _repetitions_text(row: PowerRow, max_repetitions: int) -> str:
    if row.repetitions is not None:
        return str(row.repetitions)
    return row.note or f"> {max_repetitions}"
