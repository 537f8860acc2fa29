"""The denominator belongs to the experiment: the runs a gap's cells ran but could not score.

An invalid run (a validator could not score it) and a failed one (the agent hit its timeout, a
limit, or its own error) carry no value, so a cell's rate or median is computed without them.
That is agentab's rule, and it stays: an invalid run is not a failing one. But the measured
agent can cause either kind. Code under test that spoils its own report, crashes a validator or
inflates the judge's material, an agent that loops to its timeout on the hard cases: each takes
runs out of its cell's denominator, and if those were the runs it would have failed, the gap
moves in its favour. Twenty runs a cell and three such runs turned +10 pp into +25 pp,
established.

So a pooled gap is **established only if it stays established with every unscored run of
either cell counted the way least favourable to it**: for a gap above zero, the cell's unscored
runs as the worst value seen (a rate's `false`, a median's lowest value of the two cells) and
the reference's as the best; below zero, the other way round. The bound is computed only for a
gap that is established on its scored runs and has unscored runs; it draws from streams of its
own, so it moves no other draw. Nothing here reads a file.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from agentab import stats
from agentab.metrics import MEDIAN, RATE
from agentab.stats import resampling
from agentab.stats.seeding import generator_for
from agentab.stats.strata import ALL, pooled_gap_key, pooled_gap_verdict, stratum_key

# Statuses of a run that ran and holds no value: the agent's doing or not, they count against a gap.
UNSCORED_STATUSES = ("invalid", "failed")
KEY_PREFIX = "unscored-bound"


@dataclass(frozen=True)
class Bound:
    """A gap recomputed with its cells' unscored runs counted against it."""

    unscored_cell: int
    unscored_ref: int
    verdict: stats.GapVerdict  # the interval, p and state of the bounded gap
    kind: str = MEDIAN

    def note(self) -> str:
        low, high = self.verdict.ci_low, self.verdict.ci_high
        interval = (
            f"{100 * low:+.3g} to {100 * high:+.3g} pp"
            if self.kind == RATE
            else f"{low:+.4g} to {high:+.4g}"
        )
        return (
            f"its interval excludes 0 on the scored runs, but not with the "
            f"{self.unscored_cell} invalid or failed run{'s' * (self.unscored_cell != 1)} of the "
            f"cell and the {self.unscored_ref} of the reference counted against it "
            f"(interval then {interval}): runs that left the denominator could "
            f"have made it"
        )


@dataclass(frozen=True)
class UnscoredBound:
    """What the bound of a gap is drawn from: each cell's values per task (`ScoredValues`),
    each (cell, task)'s unscored runs, the metrics' types and scales, and the tasks."""

    scored: object  # verdicts.ScoredValues
    unscored: Counter
    types: dict
    strata: list  # [""] for one task
    scales: dict

    def of_task(self, cell: str, task: str) -> int:
        """The cell's unscored runs in a task; in all of them for a scenario judged as one task
        (`strata` [""]), whatever its task's name."""
        if task:
            return self.unscored[cell, task]
        return sum(count for (name, _), count in self.unscored.items() if name == cell)

    def counts(self, cell: str) -> int:
        return sum(self.of_task(cell, task) for task in self.strata)

    def bound(self, gap) -> Bound | None:
        """The bound of a pooled, established gap whose cells have unscored runs; None when it
        needs none."""
        if not (gap.pooled and gap.verdict.is_established) or gap.sequence is not None:
            return None
        kind = self.types[gap.metric].kind
        if kind not in (RATE, MEDIAN):
            return None
        mine, theirs = self.counts(gap.cell), self.counts(gap.reference)
        if not (mine or theirs):
            return None
        worst, best = self.extremes(kind, gap)
        if gap.value_cell < gap.value_ref:  # a gap below zero: the cell's unscored runs as best
            worst, best = best, worst
        cell_groups = self.groups(gap.cell, gap.metric, worst)
        ref_groups = self.groups(gap.reference, gap.metric, best)
        if len(self.strata) > 1:
            key = f"{KEY_PREFIX}:{pooled_gap_key(gap.metric, gap.cell, gap.reference)}"
            scale = self.scales[gap.metric]
            verdict = pooled_gap_verdict(kind, scale, cell_groups, ref_groups, key)
        else:
            verdict = one_task_verdict(kind, gap, cell_groups[0], ref_groups[0])
        return Bound(mine, theirs, verdict, kind)

    def groups(self, cell: str, metric: str, imputed) -> list[list]:
        """The cell's values in each task, with each unscored run as `imputed`."""
        found = []
        for task in self.strata:
            values = (
                self.scored.of_task(cell, metric, task) if task else self.scored.get(cell, metric)
            )
            found.append([*values, *[imputed] * self.of_task(cell, task)])
        return found

    def extremes(self, kind: str, gap) -> tuple:
        """(worst, best) value a run can be counted as: a rate's false and true; a median's
        lowest and highest value of the two cells."""
        if kind == RATE:
            return False, True
        values = [
            float(value)
            for cell in (gap.cell, gap.reference)
            for value in self.scored.get(cell, gap.metric)
        ]
        return min(values), max(values)


def one_task_verdict(kind: str, gap, mine: Sequence, theirs: Sequence) -> stats.GapVerdict:
    """The bounded gap of one task, by the same bootstrap as its verdict, from streams of its own."""
    draws = []
    for cell, values in ((gap.cell, mine), (gap.reference, theirs)):
        rng = generator_for(f"{KEY_PREFIX}:{stratum_key(gap.metric, cell, '')}")
        draws.append(resampling.resample_statistic(kind, values, rng))
    value = resampling.statistic(kind, mine) - resampling.statistic(kind, theirs)
    return stats.verdict_from_draws(value, draws[0] - draws[1])


def holds(gap, verdict: stats.GapVerdict) -> bool:
    """The bounded gap is established on the same side of zero as the gap."""
    above = gap.value_cell > gap.value_ref
    return verdict.is_established and (verdict.ci_low > 0 if above else verdict.ci_high < 0)


def bounded(gap, bounds: UnscoredBound):
    """The gap, inconclusive with its note if it does not survive its unscored runs."""
    if gap.task != ALL or gap.calibration:
        return gap
    found = bounds.bound(gap)
    if found is None or holds(gap, found.verdict):
        return gap
    verdict = dataclasses.replace(gap.verdict, verdict=stats.INCONCLUSIVE)
    return dataclasses.replace(gap, verdict=verdict, note=found.note())


def unscored_warnings(result, scenario) -> list[str]:
    """A warning for each cell whose share of invalid or failed runs is not the reference's:
    where the shares differ, the runs that left might have decided a gap."""
    ran: Counter = Counter()
    unscored: Counter = Counter()
    for run in result.runs:
        if run.status == "valid" or run.status in UNSCORED_STATUSES:
            ran[run.cell] += 1
            unscored[run.cell] += run.status in UNSCORED_STATUSES

    def share(cell: str) -> str:
        return f"{unscored[cell]}/{ran[cell]} ({unscored[cell] / ran[cell]:.0%})"

    reference = scenario.reference
    if not ran[reference]:
        return []
    bounded_gaps = [gap for gap in result.family if "counted against it" in gap.note]
    return [
        f"`{cell.name}` has {share(cell.name)} runs invalid or failed against {share(reference)} "
        f"of the reference (`{reference}`): they hold no value, so each gap of the cell is "
        f"established only if it holds with them counted against it"
        + (
            f" ({sum(gap.cell == cell.name for gap in bounded_gaps)} of its gaps did not)"
            if any(gap.cell == cell.name for gap in bounded_gaps)
            else ""
        )
        for cell in scenario.cells
        if cell.name != reference
        and ran[cell.name]
        and unscored[cell.name] * ran[reference] != unscored[reference] * ran[cell.name]
    ]
