"""The families of gaps beside the cells' outcomes: the A/A copy's, and the behaviour measures'.

Each is judged by the same rule as the outcomes, and each forms a Holm family of its own: its
gaps are not findings about what the treatment achieves, and would dilute (or be diluted by) the
outcomes' family.

## The A/A calibration: what the gaps between the reference and its identical copy say.

`[protocol] aa = true` measures `<reference> (A/A)`, the reference's treatment under another
name and other seeds. Its gaps against the reference are computed like any other, but they are
not findings: they are the measurement's own noise. They stay out of the cells' Holm family
(they would dilute it with gaps nobody doubts are null) and form one of their own, get a
section of their own, and an established one whose Holm p over the A/A gaps stays below 0.05
is a warning at the top of the synthesis: the measurement moves between two identical cells, so
every established gap of the same metric deserves suspicion. Without Holm, a report with four
metrics would warn in about one null experiment out of five; with it, in at most one out of
twenty (benchmarks/sim_tasks.py).

## The behaviour measures: why two cells differ

Every run with a transcript has built-in behaviour measures (`agentab.trajectory.behaviour`:
calls by class, files read and edited, repeated calls, turns before the first edit, tokens per
turn, whether the tests ran). They are judged for every scenario without being declared, over
every run that has them (valid, invalid or failed alike: how an agent behaved does not depend on
a validator scoring it), and written to cells.csv and gaps.csv like any metric. A metric the
scenario names in `[validation].metrics` is an outcome there and is not repeated here.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

from agentab import workers
from agentab.metrics import DIAGNOSTIC, RATE, metric_type
from agentab.stats.strata import ALL
from agentab.synthesis.verdicts import (
    Gap,
    ScoredValues,
    SynthesisResult,
    compute_cell_values,
    gap_work,
)
from agentab.trajectory.behaviour import CLASSES

BEHAVIOUR_METRICS = (
    "tests_ran",
    *(f"calls_{kind}" for kind in CLASSES),
    "files_read",
    "files_edited",
    "repeated_calls",
    "tool_errors",
    "turns_before_edit",
    "tokens_per_turn",
)
MEASURED = ("valid", "invalid", "failed")


def aa_warnings(result: SynthesisResult, describe) -> list[str]:
    """One warning per established A/A gap that survives Holm over the A/A gaps; `describe`
    writes a gap's figures."""
    count = len(result.calibration)
    return [
        f"A/A calibration: `{gap.cell}` differs from `{gap.reference}` on `{gap.metric}` "
        f"({describe(gap)}; Holm p over the {count} A/A gap{'s' * (count != 1)} "
        f"{gap.p_holm:.3g}), an established gap between two identical cells: the measurement "
        "itself moves (chance, drift of the model or the environment), so read every "
        f"established gap of `{gap.metric}` with that in mind"
        for gap in result.calibration
        if gap.survives_holm
    ]


def calibration_summary(gaps: list[Gap]) -> str:
    """One sentence under the calibration table."""
    if not gaps:
        return ""
    established = [gap for gap in gaps if gap.verdict.is_established]
    if not established:
        return (
            f"None of the {len(gaps)} A/A gaps is established: the measurement did not "
            "tell two identical cells apart."
        )
    holding = sum(gap.survives_holm for gap in established)
    verb = "is" if len(established) == 1 else "are"
    if not holding:
        return (
            f"{len(established)} of the {len(gaps)} A/A gaps {verb} established, none once "
            f"Holm's adjustment over the {len(gaps)} A/A gaps is taken into account: what "
            "chance alone does in a table of this size, no warning."
        )
    return (
        f"{len(established)} of the {len(gaps)} A/A gaps {verb} established, {holding} still "
        f"after Holm's adjustment over the {len(gaps)} A/A gaps: two identical cells were told "
        "apart; see the warning above."
    )


def behaviour_values(runs, scenario) -> tuple[ScoredValues, list[str]]:
    """Each cell's values of each behaviour measure, over every measured run that has it, and
    the measures found (those the scenario does not already score)."""
    wanted = [name for name in BEHAVIOUR_METRICS if name not in scenario.metrics]
    values: dict = defaultdict(list)
    by_task: dict = defaultdict(list)
    for run in runs:
        if run.status not in MEASURED or not run.builtin:
            continue
        for metric in wanted:
            value = run.builtin.get(metric)
            if isinstance(value, bool | int | float):
                values[run.cell, metric].append(value)
                by_task[run.cell, metric, run.task].append(value)
    found = [metric for metric in wanted if any(key[1] == metric for key in values)]
    return ScoredValues(dict(values), Counter(), dict(by_task)), found


def behaviour_work(runs, scenario) -> tuple[workers.Work, list]:
    """The behaviour measures' gaps as work for the workers (a family of their own: Holm over
    these gaps alone), and each cell's values of them."""
    scored, found = behaviour_values(runs, scenario)
    types = {
        metric: metric_type([v for cell in scenario.cells for v in scored.get(cell.name, metric)])
        for metric in found
    }
    types = {metric: kind for metric, kind in types.items() if kind.kind != DIAGNOSTIC}
    if not types:
        return workers.Work([], [], lambda done: []), []
    measured = dataclasses.replace(scenario, metrics=list(types))
    cell_values = compute_cell_values(scored, measured, types)
    return gap_work(scored, measured, types, cell_values), cell_values


def behaviour_context(result: SynthesisResult, scenario, describe) -> dict:
    """What synthesis.md and the report say of the behaviour measures: each established
    behaviour gap in words (`describe` writes a gap, given the values), beside the outcomes'; and
    per cell, where its calls went: the calls of each class per run on average, their share of
    the cell's calls, and how many runs made a call at all. An average, not a median: a real
    model that answers most runs in prose has a median run of no call, whatever the others did."""
    values = {
        (row.cell, row.metric): row
        for row in result.cell_values + result.behaviour_values
        if row.task == ALL
    }
    pooled = [gap for gap in result.behaviour if gap.pooled]
    calls = []
    for cell in scenario.cells:
        counted = [
            counts for run in result.runs if run.cell == cell.name if (counts := classes_of(run))
        ]
        if not counted:
            continue
        totals = {kind: sum(counts[kind] for counts in counted) for kind in CLASSES}
        every = sum(totals.values())
        calls.append(
            {
                "cell": cell.name,
                "means": {kind: totals[kind] / len(counted) for kind in CLASSES},
                "shares": {kind: totals[kind] / every if every else 0.0 for kind in CLASSES},
                "acted": f"{sum(any(counts.values()) for counts in counted)}/{len(counted)}",
            }
        )
    return {
        "compare": runs_to_compare(result),
        "gaps": len(pooled),
        "established": [describe(gap, values) for gap in pooled if gap.verdict.is_established],
        "calls": calls,
        "classes": CLASSES,
    }


def classes_of(run) -> dict[str, int]:
    """A run's calls of each class, from its behaviour measures; {} for a run without them."""
    builtin = run.builtin or {}
    counts = {kind: builtin.get(f"calls_{kind}") for kind in CLASSES}
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in counts.values()):
        return {}
    return counts


def runs_to_compare(result: SynthesisResult) -> list[dict]:
    """For each established outcome gap of a rate: a run of the cell on the gap's side and one
    of the reference on the other, from the task where the two differ most (with several
    tasks): the two conversations to read side by side to see why the cell won or lost."""
    task_gap = {}
    for gap in result.gaps:
        if not gap.pooled and not gap.calibration:
            key = (gap.cell, gap.metric)
            if key not in task_gap or abs(gap.verdict.gap) > abs(task_gap[key].verdict.gap):
                task_gap[key] = gap
    pairs = []
    for gap in result.established:
        if gap.kind != RATE:
            continue
        task = task_gap[gap.cell, gap.metric].task if (gap.cell, gap.metric) in task_gap else None
        wanted = gap.verdict.gap > 0  # the cell's side: its successes when it is higher
        mine = first_run(result.runs, gap.cell, gap.metric, task, wanted)
        theirs = first_run(result.runs, gap.reference, gap.metric, task, not wanted)
        if mine and theirs:
            pairs.append(
                {
                    "gap": gap,
                    "task": task or "",
                    "cell_run": mine,
                    "reference_run": theirs,
                    "cell_value": wanted,
                    "reference_value": not wanted,
                }
            )
    return pairs


def first_run(runs, cell: str, metric: str, task: str | None, value: bool) -> str | None:
    """The first valid run of the cell (in the task, if one is given) whose metric is `value`."""
    ordered = sorted((run for run in runs if run.cell == cell), key=lambda run: (run.task, run.rep))
    return next(
        (
            run.run
            for run in ordered
            if run.cell == cell
            and run.status == "valid"
            and (task is None or run.task == task)
            and run.metrics.get(metric) is value
        ),
        None,
    )
