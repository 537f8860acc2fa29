"""The statistics of a synthesis: each cell's value of each metric, and each gap's verdict.

Values are gathered once from the valid runs (`ScoredValues`); a metric's type decides how it
aggregates (`decide_metric_types`); every gap against the reference gets a bootstrap verdict,
Holm-adjusted over the whole table (`compute_gaps`). Nothing here reads or writes a file, and
nothing depends on time or on the order gaps are computed.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agentab import stats, workers
from agentab.metrics import DIAGNOSTIC, MEDIAN, RATE, Aggregate, MetricType, aggregate, metric_type
from agentab.stats import resampling
from agentab.stats.strata import (
    ALL,
    LINEAR,
    pooled_aggregate,
    pooled_gap_key,
    pooled_gap_verdict,
    scale_of,
    stratum_key,
)
from agentab.synthesis.runs.results import BadFile, MissingRun, RunRecord
from agentab.synthesis.unscored import UNSCORED_STATUSES, UnscoredBound, bounded

HOLM_LEVEL = 0.05
PENDING_NOTE = "no value yet: pending a human form in every valid run"
SHORT_OF_RUNS = f"fewer than {stats.MIN_RUNS_PER_GROUP} valid runs per group"
SHORT_IN_A_TASK = f"fewer than {stats.MIN_RUNS_PER_TASK} valid runs of a cell in a task"


@dataclass(frozen=True)
class CellValue:
    cell: str
    metric: str
    aggregate: Aggregate
    pending: int
    note: str = ""
    task: str = ALL  # a task's name on a per-task row of a scenario with several tasks
    scale: str = LINEAR  # LOG: a pooled median, the geometric mean of the tasks' (`strata`)


@dataclass(frozen=True)
class Gap:
    cell: str
    reference: str
    metric: str
    kind: str
    n_cell: int
    n_ref: int
    value_cell: float
    value_ref: float
    verdict: stats.GapVerdict
    p_holm: float | None  # Holm over its family (the cells', or the A/A copy's); None per task
    note: str = ""  # why an interval that excludes 0 is still not an established gap
    task: str = ALL  # a task's name: a per-task gap, descriptive (no verdict)
    calibration: bool = False  # the A/A copy of the reference against the reference
    fewest_in_a_task: int | None = None  # a pooled gap over several tasks: its smallest group
    scale: str = LINEAR  # LOG: a median pooled over tasks as a ratio (`strata`)
    # Sequential stopping: the gap's confidence sequence over its waves (`sequential`); its
    # verdict is read from it, and its interval is the sequence's.
    sequence: object | None = None

    @property
    def pooled(self) -> bool:
        return self.task == ALL

    @property
    def in_family(self) -> bool:
        """Pooled and not A/A: the gaps that carry verdicts and that Holm adjusts over."""
        return self.pooled and not self.calibration

    @property
    def survives_holm(self) -> bool:
        return self.verdict.is_established and self.p_holm is not None and self.p_holm < HOLM_LEVEL

    @property
    def short_of_runs(self) -> bool:
        """Too few valid runs in a group for this gap ever to be established."""
        return bool(self.shortage)

    @property
    def shortage(self) -> str:
        """Why this gap can never be established for want of runs; "" when it can."""
        if self.sequence is not None:  # a confidence sequence is valid at any number of runs
            return ""
        if min(self.n_cell, self.n_ref) < stats.MIN_RUNS_PER_GROUP:
            return SHORT_OF_RUNS
        few = self.fewest_in_a_task
        if few is not None and few < stats.MIN_RUNS_PER_TASK:
            return SHORT_IN_A_TASK
        return ""

    @property
    def verdict_text(self) -> str:
        """`established`, `inconclusive`, or why an inconclusive gap could not be otherwise."""
        if self.verdict.is_established:
            return "established"
        if self.short_of_runs:
            return f"inconclusive: {self.shortage}"
        return "inconclusive"


@dataclass
class SynthesisResult:
    """What was rebuilt, and what a reader should know about the inputs."""

    results_dir: Path
    scenario_name: str
    outputs: dict[str, Path]
    runs: list[RunRecord]
    metric_types: dict[str, MetricType]
    cell_values: list[CellValue]
    gaps: list[Gap]
    missing: list[MissingRun] = field(default_factory=list)
    bad_files: list[BadFile] = field(default_factory=list)
    waves: object | None = None  # sequential stopping: the replayed waves (`waves.WavePlan`)
    looks: list = field(default_factory=list)  # fixed stopping: the looks recorded (`looks`)
    pass_k: list[Gap] = field(default_factory=list)  # each rate's pass^k gaps (`pass_k`)
    # The behaviour measures' values and gaps: a family of their own (`families`).
    behaviour_values: list[CellValue] = field(default_factory=list)
    behaviour: list[Gap] = field(default_factory=list)
    # What several outputs read and is computed once (the frontier: its figure and the prose).
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def family(self) -> list[Gap]:
        """The gaps that carry verdicts and form the Holm family (pooled, not A/A)."""
        return [gap for gap in self.gaps if gap.in_family]

    @property
    def calibration(self) -> list[Gap]:
        """The A/A copy's pooled gaps against the reference: outside the family."""
        return [gap for gap in self.gaps if gap.calibration and gap.pooled]

    @property
    def task_gaps(self) -> list[Gap]:
        """Per-task gaps of a scenario with several tasks: descriptive intervals only."""
        return [gap for gap in self.gaps if not gap.pooled]

    @property
    def established(self) -> list[Gap]:
        return [gap for gap in self.family if gap.verdict.is_established]

    def status_counts(self) -> Counter:
        return Counter(run.status for run in self.runs)


@dataclass(frozen=True)
class ScoredValues:
    """Each cell's values of each contract metric over its valid runs, gathered in one pass,
    pooled over tasks (`get`) and per task (`of_task`).

    A metric pending a human form has no value yet: it is counted apart, and the run stays valid.
    """

    values: dict[tuple[str, str], list]
    pending: Counter
    by_task: dict[tuple[str, str, str], list] = field(default_factory=dict)
    # (cell, task) -> its runs that ran and hold no value (`unscored`: they bound each gap)
    unscored: Counter = field(default_factory=Counter)

    @classmethod
    def of(cls, runs: list[RunRecord], metrics: list[str]) -> ScoredValues:
        values: dict[tuple[str, str], list] = defaultdict(list)
        by_task: dict[tuple[str, str, str], list] = defaultdict(list)
        pending: Counter = Counter()
        # Each (cell, task)'s lists, looked up once for its runs rather than by two keys per value
        # (100 000 values at 10 000 runs).
        lists: dict[tuple[str, str], list] = {}
        unscored: Counter = Counter()
        for run in runs:
            if run.status != "valid":
                if run.status in UNSCORED_STATUSES:
                    unscored[run.cell, run.task] += 1
                continue
            cell, task, found, waiting = run.cell, run.task, run.metrics, run.pending
            if (cell, task) not in lists:
                lists[cell, task] = [
                    (metric, values[cell, metric], by_task[cell, metric, task])
                    for metric in metrics
                ]
            for metric, pooled, of_task in lists[cell, task]:
                if waiting and metric in waiting:
                    pending[cell, metric] += 1
                elif metric in found:
                    value = found[metric]
                    pooled.append(value)
                    of_task.append(value)
        return cls(
            {key: got for key, got in values.items() if got},
            pending,
            {key: got for key, got in by_task.items() if got},
            unscored,
        )

    def get(self, cell: str, metric: str) -> list:
        return self.values.get((cell, metric), [])

    def of_task(self, cell: str, metric: str, task: str) -> list:
        return self.by_task.get((cell, metric, task), [])


def decide_metric_types(scored: ScoredValues, scenario) -> dict[str, MetricType]:
    types = {}
    for metric in scenario.metrics:
        values = [value for cell in scenario.cells for value in scored.get(cell.name, metric)]
        waiting = sum(scored.pending[cell.name, metric] for cell in scenario.cells)
        if not values and waiting:
            # Not a list or a string: a form nobody has filled yet. Its type is not known.
            types[metric] = MetricType(DIAGNOSTIC, PENDING_NOTE)
        else:
            types[metric] = metric_type(values)
    return types


def _strata(scenario) -> list[str]:
    """The tasks a cell's statistic is pooled over; [""] for a scenario with one task, named
    (`[tasks.<name>]`) or not (`[task]`): one task is judged as one task, whatever its name."""
    names = [task.name for task in getattr(scenario, "tasks", [])]
    return names if len(names) > 1 else [""]


def metric_scales(scored: ScoredValues, scenario, types) -> dict[str, str]:
    """How each metric is pooled over tasks (`strata.scale_of`), from every valid value of it."""
    return {
        metric: scale_of(
            types[metric].kind,
            [value for cell in scenario.cells for value in scored.get(cell.name, metric)],
        )
        for metric in scenario.metrics
    }


def compute_cell_values(scored: ScoredValues, scenario, types) -> list[CellValue]:
    """A pooled row (task `all`) per cell and metric; with several tasks, a row per task after
    it, descriptive: a cell's statistic is the equal-weight mean of its tasks' (`strata`)."""
    single_cell = len(scenario.cells) == 1
    strata = _strata(scenario)
    scales = metric_scales(scored, scenario, types) if len(strata) > 1 else {}
    rows = []
    for cell in scenario.cells:
        for metric in scenario.metrics:
            kind = types[metric].kind
            note = types[metric].note
            if kind != DIAGNOSTIC and (single_cell or not scored.get(scenario.reference, metric)):
                note = "isolated measurement: no verdict"
            pending = scored.pending[cell.name, metric]
            if len(strata) == 1 or kind == DIAGNOSTIC:
                value = aggregate(kind, scored.get(cell.name, metric))
                rows.append(CellValue(cell.name, metric, value, pending, note))
                continue
            per_task = [scored.of_task(cell.name, metric, task) for task in strata]
            each = [aggregate(kind, values) for values in per_task]
            value, pooled_note = pooled_aggregate(kind, per_task, scales[metric], each)
            note = "; ".join(text for text in (note, pooled_note) if text)
            rows.append(CellValue(cell.name, metric, value, pending, note, scale=scales[metric]))
            rows += [
                CellValue(cell.name, metric, found, 0, "per task: descriptive", task=task)
                for task, found in zip(strata, each, strict=True)
            ]
    return rows


def compute_gaps(
    scored: ScoredValues,
    scenario,
    types,
    cell_values: list[CellValue],
) -> list[Gap]:
    """Every gap against the reference: the pooled gaps, with their verdicts, Holm-adjusted over
    their family (the cells' pooled gaps; the A/A copy's form a family of their own), then, with
    several tasks, the per-task gaps (descriptive intervals, no verdict).

    With one task, each group (a cell's values of a metric) is bootstrapped once and its draws
    serve every gap it is in; a per-task gap is bootstrapped as its task alone would be. A
    pooled gap over several tasks is judged from the stratified shuffles of its two cells
    (`strata.pooled_gap_verdict`). Each metric's gaps are one job (`workers`: on the
    processor's cores); each group and each pair has its own random stream, so neither the
    processes nor their order change any draw.
    """
    (gaps,) = workers.run_all([gap_work(scored, scenario, types, cell_values)])
    return gaps


def gap_work(scored: ScoredValues, scenario, types, cell_values: list[CellValue]) -> workers.Work:
    """`compute_gaps` as jobs, one per metric, and the assembly of their verdicts."""
    if len(scenario.cells) < 2:
        return workers.Work([], [], lambda found: [])
    strata = _strata(scenario)
    by_key = {(row.cell, row.metric, row.task): row.aggregate for row in cell_values}
    judged = judged_gaps(scenario, types, by_key, strata)
    scales = metric_scales(scored, scenario, types) if len(strata) > 1 else {}
    judge = GapJudge(scored, types, strata, scenario.reference, scales)
    by_metric: dict[str, list] = defaultdict(list)
    for index, entry in enumerate(judged):
        by_metric[entry[1]].append((index, entry))
    jobs = [functools.partial(judge.verdicts, entries) for entries in by_metric.values()]
    costs = [judge.cost(entries) for entries in by_metric.values()]

    def assemble(found: list) -> list[Gap]:
        verdicts: list = [None] * len(judged)
        for index, verdict in (item for items in found for item in items):
            verdicts[index] = verdict
        gaps = assembled_gaps(scenario, types, by_key, strata, scales, judged, verdicts)
        # No gap established because runs left the denominator (`unscored`).
        bound = UnscoredBound(scored, scored.unscored, types, strata, scales)
        return [bounded(gap, bound) for gap in gaps]

    return workers.Work(jobs, costs, assemble)


def assembled_gaps(scenario, types, by_key, strata, scales, judged, verdicts) -> list[Gap]:
    """The gaps of the judged entries, given their verdicts: Holm's p, the order of the table,
    and what too few runs mean."""
    reference = scenario.reference
    aa = {cell.name for cell in scenario.cells if getattr(cell, "is_aa", False)}
    adjusted = holm_by_family(judged, verdicts, aa)
    gaps = [
        Gap(
            cell=cell,
            reference=reference,
            metric=metric,
            kind=types[metric].kind,
            n_cell=mine.n,
            fewest_in_a_task=fewest_in_a_task(by_key, (cell, reference), metric, strata, task),
            n_ref=theirs.n,
            value_cell=mine.value,
            value_ref=theirs.value,
            verdict=verdict,
            p_holm=adjusted.get(index),
            task=task,
            calibration=cell in aa,
            scale=scales.get(metric, LINEAR) if task == ALL else LINEAR,
        )
        for index, ((cell, metric, task, mine, theirs), verdict) in enumerate(
            zip(judged, verdicts, strict=True)
        )
    ]
    # The pooled gaps first (the family, then the A/A copy's), the per-task gaps after.
    gaps.sort(key=lambda gap: (not gap.pooled, gap.calibration))
    return [too_few_runs(gap) if gap.pooled else gap for gap in gaps]


@dataclass(frozen=True)
class GapJudge:
    """What a gap's verdict is drawn from: the values, the metrics' types and pooling scales,
    the tasks ([""] for one) and the reference."""

    scored: ScoredValues
    types: dict
    strata: list
    reference: str
    scales: dict

    def verdicts(self, entries: list[tuple[int, tuple]]) -> list[tuple[int, stats.GapVerdict]]:
        """(index, verdict) of each (index, judged gap) of one metric; the reference's draws of
        a group serve every gap against it."""
        theirs_drawn: dict[str, np.ndarray] = {}
        streams = resampling.generator_for  # each key's own stream
        found = []
        for index, (cell, metric, task, mine, theirs) in entries:
            if task == ALL and len(self.strata) > 1:
                found.append((index, self.shuffled_verdict(cell, metric, streams)))
                continue
            group = "" if task == ALL else task
            if group not in theirs_drawn:
                theirs_drawn[group] = self.bootstrap(self.reference, metric, group, streams)
            gap_draws = self.bootstrap(cell, metric, group, streams) - theirs_drawn[group]
            # A pooled value is the equal-weight mean of the tasks' statistics (`strata`).
            found.append((index, stats.verdict_from_draws(mine.value - theirs.value, gap_draws)))
        return found

    def cost(self, entries: list[tuple[int, tuple]]) -> int:
        """About how many arrays of draws the verdicts of these entries make."""
        pooled = len(self.strata) > 1
        tasks = len(self.strata) * (2 if self.types[entries[0][1][1]].kind == MEDIAN else 1)
        return sum(tasks if pooled and entry[2] == ALL else 1 for _, entry in entries)

    def bootstrap(
        self, cell: str, metric: str, task: str, streams: Callable[[str], np.random.Generator]
    ) -> np.ndarray:
        values = self.scored.of_task(cell, metric, task) if task else self.scored.get(cell, metric)
        rng = streams(stratum_key(metric, cell, task))
        return resampling.resample_statistic(self.types[metric].kind, values, rng)

    def shuffled_verdict(
        self, cell: str, metric: str, streams: Callable[[str], np.random.Generator]
    ) -> stats.GapVerdict:
        mine = [self.scored.of_task(cell, metric, task) for task in self.strata]
        theirs = [self.scored.of_task(self.reference, metric, task) for task in self.strata]
        kind, key = self.types[metric].kind, pooled_gap_key(metric, cell, self.reference)
        return pooled_gap_verdict(kind, self.scales[metric], mine, theirs, key, rng=streams(key))


def judged_gaps(scenario, types, by_key: dict, strata: list[str]) -> list[tuple]:
    """(cell, metric, task, mine, theirs) of every gap to judge: task ALL for a pooled gap (when
    both cells have a pooled value), then a task's name for each per-task gap."""
    reference = scenario.reference
    judged = []
    for cell in scenario.cells:
        if cell.name == reference:
            continue
        for metric in scenario.metrics:
            if types[metric].kind not in (RATE, MEDIAN):
                continue
            mine, theirs = by_key[cell.name, metric, ALL], by_key[reference, metric, ALL]
            if mine.value is not None and theirs.value is not None and mine.n and theirs.n:
                judged.append((cell.name, metric, ALL, mine, theirs))
            for task in strata if len(strata) > 1 else []:
                mine_t, theirs_t = by_key[cell.name, metric, task], by_key[reference, metric, task]
                if mine_t.n and theirs_t.n:
                    judged.append((cell.name, metric, task, mine_t, theirs_t))
    return judged


def holm_by_family(judged: list[tuple], verdicts, aa: set[str]) -> dict[int, float]:
    """Holm's p of each pooled gap, over its family: the cells' pooled gaps together, the A/A
    copy's apart (a report with four A/A gaps would otherwise warn in about one null experiment
    out of five rather than one out of twenty)."""
    adjusted = {}
    for in_aa in (False, True):
        family = [i for i, item in enumerate(judged) if item[2] == ALL and (item[0] in aa) == in_aa]
        adjusted |= dict(zip(family, stats.holm([verdicts[i].p for i in family]), strict=True))
    return adjusted


def fewest_in_a_task(by_key: dict, cells, metric: str, strata, task: str) -> int | None:
    """The smallest (cell, task) group of a pooled gap over several tasks; None otherwise."""
    if task != ALL or len(strata) < 2:
        return None
    return min(by_key[cell, metric, name].n for cell in cells for name in strata)


def too_few_runs(gap: Gap) -> Gap:
    """A gap is never established from fewer than stats.MIN_RUNS_PER_GROUP valid runs in either
    group: a bootstrap of so few values has too little spread, and chance alone looks certain.
    Every such gap says so, or a reader takes `+100 pp [+100, +100] inconclusive` for a riddle."""
    if not gap.short_of_runs:
        return gap
    if gap.shortage == SHORT_IN_A_TASK:
        return short_in_a_task(gap)
    smallest = min(gap.n_cell, gap.n_ref)
    runs = f"{gap.n_cell} and {gap.n_ref} valid runs here"
    needed = f"a gap needs at least {stats.MIN_RUNS_PER_GROUP} per group to be established"
    if not gap.verdict.is_established:
        return dataclasses.replace(gap, note=f"{SHORT_OF_RUNS} ({runs}): {needed}")
    note = (
        f"its interval excludes 0, but with {smallest} valid run{'s' * (smallest != 1)} in a "
        f"group {needed}"
    )
    verdict = dataclasses.replace(gap.verdict, verdict=stats.INCONCLUSIVE)
    return dataclasses.replace(gap, verdict=verdict, note=note)


def short_in_a_task(gap: Gap) -> Gap:
    """A pooled gap whose cells have enough runs in all, but too few in one task: a task's
    rate or median from so few runs has no spread to speak of (`benchmarks/sim_tasks.py`:
    with 2 runs per task, 19% of null gaps came out established)."""
    needed = (
        f"a pooled gap needs at least {stats.MIN_RUNS_PER_TASK} valid runs of each cell in each "
        f"task (the fewest here: {gap.fewest_in_a_task})"
    )
    if not gap.verdict.is_established:
        return dataclasses.replace(gap, note=f"{SHORT_IN_A_TASK}: {needed}")
    verdict = dataclasses.replace(gap.verdict, verdict=stats.INCONCLUSIVE)
    return dataclasses.replace(gap, verdict=verdict, note=f"its interval excludes 0, but {needed}")
