"""When a synthesis may be read: the waves of a sequential scenario, and the looks under the
fixed rule.

The waves of a sequential scenario, replayed from its runs: which cells got which wave, and
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

## Looks under the fixed rule

Looks under the fixed rule: each synthesis a person could have read, recorded, and the
warning once there were several.

The fixed rule is valid for one look at the number of runs planned. Reading the synthesis at
10 runs, raising `repetitions` and reading it again is a second look: stopping at the first
"established" of a look every 10 runs up to 50 calls about 12% of null gaps established, not 5%
(docs/synthesis.md). The results folder keeps `looks.json`: the runs per cell each synthesis
was written from, in order, one entry per distinct count (rebuilding the same synthesis is not
another look). A sequential scenario needs none of this, its sequences being valid at every
wave, as long as its design (wave and maximum, which its bets are sized for) stays as it was:
its looks record the design, and a change of it is warned of.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from agentab.files import write_json
from agentab.metrics import MEDIAN, RATE
from agentab.stats.sequential import SequencePath, crossings, pair_values, sequence_path
from agentab.synthesis.unscored import UNSCORED_STATUSES

JUDGED = (RATE, MEDIAN)


@dataclass
class WavePlan:
    """What the waves so far decided: each cell's waves, and each gap's sequence."""

    wave: int  # runs per cell and task in each wave
    most: int  # the most waves a cell can get
    looked: int  # the waves judged so far
    given: dict[str, int] = field(default_factory=dict)  # cell name -> waves it was given
    paths: dict[tuple[str, str], SequencePath] = field(default_factory=dict)  # (cell, metric)
    # An established gap's sequence again, its cells' invalid and failed runs counted against
    # it (`unscored`): the gap stays established only if this one is too.
    bounded: dict[tuple[str, str], SequencePath] = field(default_factory=dict)
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
    unscored = {(run.cell, run.task, run.rep) for run in runs if run.status in UNSCORED_STATUSES}
    for (cell, metric), path in plan.paths.items():
        if path.established and any(key[0] in (cell, reference) for key in unscored):
            above = path.last.low > 0
            imputed = counted_against(
                values, unscored, kinds[metric], metric, cell, reference, above
            )
            looks = min(plan.given[cell], plan.looked)
            d, ends = gap_stream(
                imputed, kinds[metric], cell, reference, metric, tasks, wave, looks
            )
            plan.bounded[cell, metric] = sequence_path(kinds[metric], d, ends, horizon)
    return plan


def counted_against(values, unscored, kind, metric, cell, reference, above: bool) -> dict:
    """`values` with each invalid or failed run of the two cells given the value least
    favourable to a gap above zero (`above`) or below it: the cell's the worst, the
    reference's the best (a rate's 0 and 1; a median's lowest and highest value of the two)."""
    seen = [
        float(value)
        for (name, name_metric, _, _), value in values.items()
        if name in (cell, reference) and name_metric == metric
    ]
    if kind == RATE:
        worst, best = 0.0, 1.0
    elif seen:
        worst, best = min(seen), max(seen)
    else:
        return values
    if not above:
        worst, best = best, worst
    imputed = dict(values)
    for name, task, rep in unscored:
        if name in (cell, reference):
            imputed[name, metric, task, rep] = worst if name == cell else best
    return imputed


LOOKS_FILE = "looks.json"


def runs_per_cell(runs, scenario) -> dict[str, int]:
    """The runs with measures of each cell (any status): what the synthesis was read from."""
    counted = Counter(run.cell for run in runs)
    return {cell.name: counted.get(cell.name, 0) for cell in scenario.cells}


def read_looks(results_dir: Path) -> list[dict]:
    """The looks recorded; [] when none or the file cannot be read (it is a record, not an input
    of any verdict)."""
    try:
        data = json.loads((Path(results_dir) / LOOKS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    looks = data.get("looks") if isinstance(data, dict) else None
    return [look for look in looks or [] if isinstance(look, dict)]


def record_look(results_dir: Path, runs: dict[str, int], design: dict | None = None) -> list[dict]:
    """Add this synthesis as a look unless the last one had the same runs per cell (and, for
    a sequential scenario, the same design: its wave and maximum)."""
    looks = read_looks(results_dir)
    entry = {"runs_per_cell": runs, **({"design": design} if design else {})}
    last = {key: looks[-1].get(key) for key in entry} if looks else None
    if last != entry:
        looks.append({"look": len(looks) + 1, **entry})
        write_json({"looks": looks}, Path(results_dir) / LOOKS_FILE)
    return looks


def design_of(scenario) -> dict | None:
    """A sequential scenario's design, what its bets were sized for; None for a fixed one."""
    if not scenario.sequential:
        return None
    return {"wave": scenario.wave, "repetitions": scenario.repetitions}


def design_warning(looks: list[dict]) -> list[str]:
    """A sequential design changed after earlier syntheses: its bets are sized for the maximum,
    so a maximum chosen after seeing runs is a choice made with the data."""
    designs = []
    for look in looks:
        design = look.get("design")
        if isinstance(design, dict) and design not in designs:
            designs.append(design)
    if len(designs) < 2:
        return []
    named = ", then ".join(
        f"waves of {d.get('wave')} up to {d.get('repetitions')}" for d in designs
    )
    return [
        f"the sequential design changed between syntheses of this results folder ({named}; "
        "`looks.json`): every decision is replayed under the design the scenario has now, but "
        "its sequences are sized for a maximum fixed before the runs were seen, and a maximum "
        "or a wave changed after a look can overstate their confidence. Keep wave and "
        "repetitions as they were, or run the new design in a results folder of its own"
    ]


def looks_warning(looks: list[dict]) -> list[str]:
    """The warning of a fixed-n verdict read after earlier looks (a sequential scenario's
    looks are what its rule is for: only a changed design is warned of)."""
    if any("design" in look for look in looks):
        return design_warning(looks)
    if len(looks) < 2:
        return []
    earlier = ", ".join(
        "/".join(str(n) for n in sorted(set((look.get("runs_per_cell") or {}).values())))
        for look in looks[:-1]
    )
    return [
        f"this synthesis is look {len(looks)} at this results folder: earlier syntheses were "
        f"written at {earlier} runs per cell (`looks.json`). Each verdict here is valid for one "
        "look at a number of runs fixed in advance; a fixed-n verdict read after several looks "
        "overstates its confidence (looked at every 10 runs up to 50 and stopped at the first "
        "established, about 12% of gaps with no effect are called established, not 5%). For an "
        'experiment read as it goes, use `[protocol] stopping = "sequential"` '
        "(docs/scenario.md#stopping-a-fixed-number-of-runs-or-waves)"
    ]
