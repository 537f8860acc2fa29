"""The statistics of a synthesis: each cell's value of each metric, and each gap's verdict.

Values are gathered once from the valid runs (`ScoredValues`); a metric's type decides how it
aggregates (`decide_metric_types`); every gap against the reference gets a bootstrap verdict,
Holm-adjusted over the whole table (`compute_gaps`). Nothing here reads or writes a file, and
nothing depends on time or on the order gaps are computed.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agentab.metrics import DIAGNOSTIC, MEDIAN, RATE, Aggregate, MetricType, aggregate, metric_type
from agentab.synthesis import stats
from agentab.synthesis.results import BadFile, MissingRun, RunRecord

HOLM_LEVEL = 0.05
# Threads that resample groups; numpy draws without holding the interpreter lock.
WORKERS = max(1, min(4, os.cpu_count() or 1))
PENDING_NOTE = "no value yet: pending a human form in every valid run"
SHORT_OF_RUNS = f"fewer than {stats.MIN_RUNS_PER_GROUP} valid runs per group"


@dataclass(frozen=True)
class CellValue:
    cell: str
    metric: str
    aggregate: Aggregate
    pending: int
    note: str = ""


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
    p_holm: float
    note: str = ""  # why an interval that excludes 0 is still not an established gap

    @property
    def survives_holm(self) -> bool:
        return self.verdict.is_established and self.p_holm < HOLM_LEVEL

    @property
    def short_of_runs(self) -> bool:
        """Too few valid runs in a group for this gap ever to be established."""
        return min(self.n_cell, self.n_ref) < stats.MIN_RUNS_PER_GROUP

    @property
    def verdict_text(self) -> str:
        """`established`, `inconclusive`, or why an inconclusive gap could not be otherwise."""
        if self.verdict.is_established:
            return "established"
        if self.short_of_runs:
            return f"inconclusive: {SHORT_OF_RUNS}"
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

    @property
    def established(self) -> list[Gap]:
        return [gap for gap in self.gaps if gap.verdict.is_established]

    def status_counts(self) -> Counter:
        return Counter(run.status for run in self.runs)


@dataclass(frozen=True)
class ScoredValues:
    """Each cell's values of each contract metric over its valid runs, gathered in one pass.

    A metric pending a human form has no value yet: it is counted apart, and the run stays valid.
    """

    values: dict[tuple[str, str], list]
    pending: Counter

    @classmethod
    def of(cls, runs: list[RunRecord], metrics: list[str]) -> ScoredValues:
        values: dict[tuple[str, str], list] = defaultdict(list)
        pending: Counter = Counter()
        for run in runs:
            if run.status != "valid":
                continue
            for metric in metrics:
                if metric in run.pending:
                    pending[run.cell, metric] += 1
                elif metric in run.metrics:
                    values[run.cell, metric].append(run.metrics[metric])
        return cls(dict(values), pending)

    def get(self, cell: str, metric: str) -> list:
        return self.values.get((cell, metric), [])


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


def compute_cell_values(scored: ScoredValues, scenario, types) -> list[CellValue]:
    single_cell = len(scenario.cells) == 1
    rows = []
    for cell in scenario.cells:
        for metric in scenario.metrics:
            kind = types[metric].kind
            note = types[metric].note
            if kind != DIAGNOSTIC and (single_cell or not scored.get(scenario.reference, metric)):
                note = "isolated measurement: no verdict"
            rows.append(
                CellValue(
                    cell=cell.name,
                    metric=metric,
                    aggregate=aggregate(kind, scored.get(cell.name, metric)),
                    pending=scored.pending[cell.name, metric],
                    note=note,
                )
            )
    return rows


def compute_gaps(
    scored: ScoredValues,
    scenario,
    types,
    cell_values: list[CellValue],
    meanwhile: Callable[[], object] | None = None,
) -> list[Gap]:
    """Every gap against the reference, with its verdict, Holm-adjusted over the whole table.

    Each group (a cell's values of a metric) is resampled once, on worker threads: numpy
    releases the interpreter lock while it draws, and each group has its own random
    stream (`stats.generator_for`), so neither the threads nor their order change any draw.
    `meanwhile`, if given, runs on the calling thread while the groups are being resampled.
    """
    if len(scenario.cells) < 2:
        if meanwhile is not None:
            meanwhile()
        return []
    by_key = {(row.cell, row.metric): row.aggregate for row in cell_values}
    judged = []
    for cell in scenario.cells:
        if cell.name == scenario.reference:
            continue
        for metric in scenario.metrics:
            if types[metric].kind not in (RATE, MEDIAN):
                continue
            mine, theirs = by_key[cell.name, metric], by_key[scenario.reference, metric]
            if mine.n == 0 or theirs.n == 0:
                continue
            judged.append((cell.name, metric, mine, theirs))
    groups = list(
        dict.fromkeys(
            group
            for cell, metric, _, _ in judged
            for group in ((scenario.reference, metric), (cell, metric))
        )
    )

    def resample(group: tuple[str, str]) -> np.ndarray:
        cell, metric = group
        rng = stats.generator_for(stats.group_key(metric, cell))
        return stats.resample_statistic(types[metric].kind, scored.get(cell, metric), rng)

    gap_draws = np.empty((len(judged), stats.DRAWS))
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {group: pool.submit(resample, group) for group in groups}
        if meanwhile is not None:
            meanwhile()
        for row, (cell, metric, _, _) in enumerate(judged):
            np.subtract(
                futures[cell, metric].result(),
                futures[scenario.reference, metric].result(),
                out=gap_draws[row],
            )
    verdicts = stats.verdicts_from_draws(
        [mine.value - theirs.value for _, _, mine, theirs in judged], gap_draws
    )
    adjusted = stats.holm([verdict.p for verdict in verdicts])
    return [
        too_few_runs(
            Gap(
                cell=cell,
                reference=scenario.reference,
                metric=metric,
                kind=types[metric].kind,
                n_cell=mine.n,
                n_ref=theirs.n,
                value_cell=mine.value,
                value_ref=theirs.value,
                verdict=verdict,
                p_holm=p_holm,
            )
        )
        for (cell, metric, mine, theirs), verdict, p_holm in zip(
            judged, verdicts, adjusted, strict=True
        )
    ]


def too_few_runs(gap: Gap) -> Gap:
    """A gap is never established from fewer than stats.MIN_RUNS_PER_GROUP valid runs in either
    group: a bootstrap of so few values has too little spread, and chance alone looks certain.
    Every such gap says so, or a reader takes `+100 pp [+100, +100] inconclusive` for a riddle."""
    if not gap.short_of_runs:
        return gap
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
