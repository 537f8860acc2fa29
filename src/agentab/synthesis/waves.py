"""The waves of a sequential scenario, replayed from its runs: which cells got which wave, and
at which wave each gap was decided.

`[protocol] stopping = "sequential"` runs every cell's first wave; after wave k a cell gets
wave k + 1 while one of its gaps in a `decide` metric is undecided, up to `repetitions` runs;
the reference runs as long as any cell does. The workflow's checkpoint after each wave
(`decide_wave`) and the synthesis both call `replay_waves`, on the runs present and their run
indices alone, so a synthesis rebuilt from measures.json gives every decision again, and the
same one the workflow acted on.

A gap's sequence (`agentab.stats.sequential`) pairs the cell's run i with the reference's
run i of the same task; a look after wave k holds the pairs of runs 1 to k x wave, wave by wave,
task by task, run by run. A run that is not valid, or has no value of the metric, leaves its
pair out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentab.metrics import MEDIAN, RATE
from agentab.stats.sequential import SequencePath, crossings, pair_values, sequence_path

JUDGED = (RATE, MEDIAN)


@dataclass
class WavePlan:
    """What the waves so far decided: each cell's waves, and each gap's sequence."""

    wave: int  # runs per cell and task in each wave
    most: int  # the most waves a cell can get
    looked: int  # the waves judged so far
    given: dict[str, int] = field(default_factory=dict)  # cell name -> waves it was given
    paths: dict[tuple[str, str], SequencePath] = field(default_factory=dict)  # (cell, metric)
    halted: set[int] = field(default_factory=set)  # a wave the budget cut short: no wave after

    def runs_given(self, cell: str) -> int:
        """Runs per task the cell was given: its waves x the wave."""
        return self.given.get(cell, 0) * self.wave

    def runs_given_by_cell(self, cells) -> dict[str, int]:
        """`runs_given` of each cell, by its name."""
        return {cell.name: self.runs_given(cell.name) for cell in cells}

    def next_wave_cells(self) -> list[str]:
        """The cells that get wave `looked` + 1 (none after the last)."""
        return [cell for cell, waves in self.given.items() if waves > self.looked]


def values_by_run(runs, metrics) -> dict[tuple[str, str, str, int], object]:
    """(cell, metric, task, rep) -> its value, over the valid runs."""
    table = {}
    for run in runs:
        if run.status != "valid":
            continue
        for metric in metrics:
            if metric in run.metrics and metric not in run.pending:
                table[run.cell, metric, run.task, run.rep] = run.metrics[metric]
    return table


def task_order(scenario, runs) -> list[str]:
    """The tasks in the scenario's order (a scenario with one [task] has the task "")."""
    names = [task.name for task in getattr(scenario, "tasks", [])]
    seen = sorted({run.task for run in runs} - set(names))
    return names + seen or [""]


def gap_stream(values, kind, cell, reference, metric, tasks, wave, looks):
    """A gap's pairs through `looks` waves, in order, and the pairs so far after each wave."""
    mine, theirs, ends = [], [], []
    for number in range(1, looks + 1):
        for task in tasks:
            for rep in range((number - 1) * wave + 1, number * wave + 1):
                pair = (
                    values.get((cell, metric, task, rep)),
                    values.get((reference, metric, task, rep)),
                )
                if pair[0] is not None and pair[1] is not None:
                    mine.append(float(pair[0]))
                    theirs.append(float(pair[1]))
        ends.append(len(mine))
    return pair_values(kind, mine, theirs), ends


def replay_if_sequential(results_dir, scenario, runs, types) -> WavePlan | None:
    """The waves replayed from runs already read, with their metrics' types (who got which
    wave), as the synthesis and the report both need them; None under the fixed rule."""
    if not scenario.sequential:
        return None
    kinds = {name: kind.kind for name, kind in types.items()}
    return replay_waves(scenario, runs, kinds, None, not_started(results_dir, scenario))


def replay_results(results_dir, scenario, through: int | None = None) -> WavePlan:
    """`replay_waves` on a results folder: its runs, their metrics' types, and the runs the
    budget did not start."""
    from agentab.synthesis.runs.results import read_all_runs
    from agentab.synthesis.verdicts import ScoredValues, decide_metric_types

    runs, _, _ = read_all_runs(results_dir, scenario)
    types = decide_metric_types(ScoredValues.of(runs, scenario.metrics), scenario)
    kinds = {metric: kind.kind for metric, kind in types.items()}
    return replay_waves(scenario, runs, kinds, through, not_started(results_dir, scenario))


def not_started(results_dir, scenario) -> set[int]:
    """The run indices of the runs the budget did not start (any cell)."""
    from agentab.layout import ResultsFolder
    from agentab.synthesis.runs.results import not_started_reason

    folder = ResultsFolder(results_dir)
    return {
        rep
        for cell in scenario.run_cells
        for rep in range(1, scenario.repetitions + 1)
        if folder.run(cell.slug, rep).measures.exists()
        and not_started_reason(folder.run(cell.slug, rep).measures)
    }


def replay_waves(
    scenario, runs, kinds: dict[str, str], through: int | None = None, unstarted=frozenset()
) -> WavePlan:
    """Replay the decisions after waves 1 to `through` (all of them by default).

    `kinds`: each metric's aggregation (rate, median, or another: not judged). `unstarted`:
    the run indices the budget did not start; a wave holding one gets no wave after it.
    """
    wave, most = scenario.wave, scenario.waves
    through = most if through is None else min(through, most)
    reference = scenario.reference
    tasks = task_order(scenario, runs)
    values = values_by_run(runs, scenario.metrics)
    horizon = scenario.repetitions * len(tasks)
    judged = [m for m in scenario.metrics if kinds.get(m) in JUDGED]
    plan = WavePlan(wave, most, 0, {cell.name: 1 for cell in scenario.cells})
    others = [cell.name for cell in scenario.cells if cell.name != reference]
    streams = {
        (cell, metric): gap_stream(
            values, kinds[metric], cell, reference, metric, tasks, wave, through
        )
        for cell in others
        for metric in judged
    }
    # Whether each gap's sequence has excluded 0 by each wave: the fast path of the rule, the
    # same function the simulations use (a wave's decision needs no interval).
    crossed = {key: crossings(d[None, :], ends, horizon)[0] for key, (d, ends) in streams.items()}

    def undecided(cell: str, metric: str, number: int) -> bool:
        """A gap without a sequence (a metric with no rate or median yet: a form nobody filled)
        is undecided too: it holds its cell, as docs/scenario.md says."""
        return (cell, metric) not in crossed or not crossed[cell, metric][number - 1]

    for number in range(1, through + 1):
        still_open = [
            cell
            for cell in others
            if plan.given[cell] >= number
            and any(undecided(cell, metric, number) for metric in scenario.decide)
        ]
        if not others:  # one cell, no gap: nothing can be decided early, every wave runs
            still_open = [reference]
        plan.looked = number
        if any((number - 1) * wave < rep <= number * wave for rep in unstarted):
            plan.halted.add(number)
            break
        if number < most and still_open:
            for name in {*still_open, reference}:
                plan.given[name] = number + 1
    for (cell, metric), (d, ends) in streams.items():
        looks = min(plan.given[cell], plan.looked)
        kept = ends[:looks]
        plan.paths[cell, metric] = sequence_path(
            kinds[metric], d[: kept[-1] if kept else 0], kept, horizon
        )
    return plan
