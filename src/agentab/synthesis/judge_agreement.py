"""The judge against people: Cohen's κ, and each cell's judge rate corrected by people's labels.

A form with `calibrates = "<judge metric>"` has a person answer the judge's question for a
seeded sample of valid runs, spread over the run cells (`validators.calibrating`). Its answers
reach the measures as an extra metric, beside the judge's own. From them:

- **agreement**: the confusion table of person against judge over the labelled runs, and
  Cohen's κ = (p_o − p_e) / (1 − p_e), the agreement beyond what two raters answering at their
  own rates would reach by chance; its 95% interval from resampling the labelled runs;
- **the corrected rate** of each cell, by prediction-powered inference (PPI; Angelopoulos et
  al., 2023): the judge's rate over every valid run of the cell, plus the mean of
  (person − judge) over the cell's labelled runs. The labelled runs are a uniform random subset
  of the cell's runs, so the second term is an unbiased estimate of the judge's error in that
  cell, whatever that error is: the sum is unbiased for the rate people would give. With several
  tasks, each task is corrected on its own and the cell's value is their equal-weight mean, as
  every pooled value is;
- **the corrected gaps**, each against the reference, by the gap rule: resampled
  `stats.DRAWS` times with a fixed seed, established iff the 95% interval excludes 0.

The resampling follows the prediction-powered bootstrap (Zrnic and Candès, 2024): the judge's
answers over all runs and the labelled differences are resampled apart, each from the exact
distribution of its resampled mean (binomial for the judge's rate, multinomial over −1, 0 and +1 for
the differences), on streams named after what they resample.

A corrected gap restates a judge's gap on a corrected scale: it asks the same question of the
same runs, so it is reported beside the judge's own gap and is not another member of the Holm
family (docs/synthesis.md). With fewer than `stats.MIN_RUNS_PER_GROUP` labelled runs in a cell,
its corrected gap is never established: a resampled mean of so few differences has too little
spread, as a rate of so few runs does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from agentab import stats
from agentab.synthesis.verdicts import Gap, SynthesisResult

FEW_LABELS = f"fewer than {stats.MIN_RUNS_PER_GROUP} labelled runs per cell"


@dataclass(frozen=True)
class Confusion:
    """Person (rows) against judge (columns) over the labelled runs."""

    both_true: int
    person_only: int  # the person said true, the judge false
    judge_only: int  # the judge said true, the person false
    both_false: int

    @classmethod
    def of(cls, pairs: list[tuple[bool, bool]]) -> Confusion:
        """From (person, judge) pairs."""
        return cls(
            sum(1 for p, j in pairs if p and j),
            sum(1 for p, j in pairs if p and not j),
            sum(1 for p, j in pairs if j and not p),
            sum(1 for p, j in pairs if not p and not j),
        )

    @property
    def counts(self) -> np.ndarray:
        return np.array([self.both_true, self.person_only, self.judge_only, self.both_false])

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def agreed(self) -> int:
        return self.both_true + self.both_false


def cohen_kappa(table: Confusion) -> float | None:
    """Cohen's κ of a 2 × 2 table; None when chance alone agrees always (both said one answer
    to every run), where κ is 0 / 0."""
    value = kappas(table.counts[None, :])[0]
    return None if np.isnan(value) else float(value)


def kappas(counts: np.ndarray) -> np.ndarray:
    """κ of each row of tables (both_true, person_only, judge_only, both_false); NaN where
    undefined."""
    a, b, c, d = (counts[:, i].astype(float) for i in range(4))
    n = a + b + c + d
    observed = (a + d) / n
    chance = ((a + b) * (a + c) + (c + d) * (b + d)) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)


def kappa_interval(table: Confusion, key: str) -> tuple[float, float] | None:
    """The 95% percentile interval of κ over resamples of the labelled runs (a resample of n
    runs is a multinomial draw of the table's four counts); None when no resample has a κ."""
    if table.n == 0:
        return None
    rng = stats.generator_for(key)
    draws = kappas(rng.multinomial(table.n, table.counts / table.n, size=stats.DRAWS))
    finite = draws[~np.isnan(draws)]
    if finite.size == 0:
        return None
    return stats.percentile_interval(finite)


# --- prediction-powered inference ---------------------------------------------------------------


def ppi_rate(judge: list[bool], labelled: list[tuple[bool, bool]]) -> float:
    """The judge's rate over every run, plus the mean of (person − judge) over the labelled
    runs: the judge's rate corrected by people, unbiased whatever the judge's errors."""
    return sum(judge) / len(judge) + rectifier(labelled)


def rectifier(labelled: list[tuple[bool, bool]]) -> float:
    """The mean of (person − judge) over labelled (person, judge) pairs."""
    return sum(int(p) - int(j) for p, j in labelled) / len(labelled)


def ppi_draws(judge: list[bool], labelled: list[tuple[bool, bool]], key: str) -> np.ndarray:
    """`stats.DRAWS` resampled corrected rates: the judge's answers and the labelled
    differences resampled apart, each on its own stream."""
    n_judge = len(judge)
    judged = stats.generator_for(f"{key}\x1fjudge").binomial(
        n_judge, sum(judge) / n_judge, size=stats.DRAWS
    )
    differences = [int(p) - int(j) for p, j in labelled]
    shares = np.array([differences.count(value) for value in (-1, 0, 1)]) / len(differences)
    counts = stats.generator_for(f"{key}\x1flabels").multinomial(
        len(differences), shares, size=stats.DRAWS
    )
    return judged / n_judge + (counts[:, 2] - counts[:, 0]) / len(differences)


@dataclass(frozen=True)
class CorrectedRate:
    """One cell's judge rate, and that rate corrected by its labelled runs."""

    cell: str
    judged: int  # valid runs with the judge's answer
    judge_rate: float | None
    labelled: int  # of them, runs a person labelled
    value: float | None  # None: a task without a labelled run, or no run at all
    low: float | None = None
    high: float | None = None
    note: str = ""


@dataclass(frozen=True)
class CorrectedGap:
    """A corrected rate against the reference's, beside the judge's own gap."""

    cell: str
    reference: str
    value_cell: float
    value_ref: float
    verdict: stats.GapVerdict
    judge_gap: Gap | None  # the same gap of the judge's raw rates, from the gap table
    note: str = ""

    @property
    def verdict_text(self) -> str:
        if self.verdict.is_established:
            return stats.ESTABLISHED
        return f"{stats.INCONCLUSIVE}: {self.note}" if self.note else stats.INCONCLUSIVE


@dataclass(frozen=True)
class JudgeAgreement:
    """What one calibrating form says of its judge."""

    form: str
    judge_metric: str
    person_metric: str
    sample: int
    table: Confusion
    kappa: float | None
    kappa_interval: tuple[float, float] | None
    rates: list[CorrectedRate]
    gaps: list[CorrectedGap]


def judge_agreements(result: SynthesisResult, scenario) -> list[JudgeAgreement]:
    """One per calibrating form of the scenario, in declaration order."""
    return [
        judge_agreement(result, scenario, name, spec)
        for name, spec in scenario.validators.items()
        if spec.mode == "form" and spec.options.get("calibrates")
    ]


def judge_agreement(result: SynthesisResult, scenario, name: str, spec) -> JudgeAgreement:
    judged, person = spec.options["calibrates"], spec.options["fills"][0]
    tasks = [task.name for task in scenario.tasks] if len(scenario.tasks) > 1 else [None]
    groups = labelled_groups(result.runs, judged, person)
    pairs = [pair for (_, _), (_, found) in groups.items() for pair in found]
    table = Confusion.of(pairs)
    key = f"judge-people\x1f{judged}\x1f{person}"
    rates, draws = {}, {}
    for cell in scenario.cells:
        rates[cell.name], draws[cell.name] = corrected_rate(groups, cell.name, tasks, key)
    return JudgeAgreement(
        form=name,
        judge_metric=judged,
        person_metric=person,
        sample=int(spec.options.get("sample", 0)),
        table=table,
        kappa=cohen_kappa(table) if table.n else None,
        kappa_interval=kappa_interval(table, f"{key}\x1fkappa"),
        rates=list(rates.values()),
        gaps=corrected_gaps(result, scenario, judged, rates, draws),
    )


Groups = dict[tuple[str, str], tuple[list[bool], list[tuple[bool, bool]]]]


def labelled_groups(runs, judged: str, person: str) -> Groups:
    """(cell, task) -> (the judge's answers over its valid runs, the (person, judge) pairs of
    the labelled ones)."""
    groups: Groups = {}
    for run in runs:
        answer = run.metrics.get(judged)
        if run.status != "valid" or not isinstance(answer, bool):
            continue
        judge, pairs = groups.setdefault((run.cell, run.task), ([], []))
        judge.append(answer)
        label = run.extra.get(person, run.metrics.get(person))
        if isinstance(label, bool):
            pairs.append((label, answer))
    return groups


def corrected_rate(groups: Groups, cell: str, tasks: list, key: str):
    """A cell's CorrectedRate and its draws (None when it has no corrected value)."""

    def of_task(task):
        if task is None:  # one task: every run of the cell
            found = [group for (c, _), group in groups.items() if c == cell]
            return [a for g in found for a in g[0]], [p for g in found for p in g[1]]
        return groups.get((cell, task), ([], []))

    per_task = [of_task(task) for task in tasks]
    judged = sum(len(judge) for judge, _ in per_task)
    labelled = sum(len(pairs) for _, pairs in per_task)
    base = dict(cell=cell, judged=judged, labelled=labelled)
    if any(not judge for judge, _ in per_task):
        return CorrectedRate(**base, judge_rate=None, value=None, note="no judged run"), None
    judge_rate = float(np.mean([sum(judge) / len(judge) for judge, _ in per_task]))
    if any(not pairs for _, pairs in per_task):
        note = "no labelled run yet" if not labelled else "a task has no labelled run"
        return CorrectedRate(**base, judge_rate=judge_rate, value=None, note=note), None
    value = float(np.mean([ppi_rate(judge, pairs) for judge, pairs in per_task]))
    draws = np.mean(
        [
            ppi_draws(judge, pairs, f"{key}\x1f{cell}\x1f{task or ''}")
            for (judge, pairs), task in zip(per_task, tasks, strict=True)
        ],
        axis=0,
    )
    # A rate lies in [0, 1]: an interval end past it is cut there (no coverage is lost). The
    # value is left as it is: cut, it would no longer be unbiased.
    low, high = np.clip(stats.percentile_interval(draws), 0, 1)
    rate = CorrectedRate(
        **base, judge_rate=judge_rate, value=value, low=float(low), high=float(high)
    )
    return rate, draws


def corrected_gaps(result, scenario, judged: str, rates: dict, draws: dict) -> list[CorrectedGap]:
    """Each cell's corrected rate against the reference's, by the gap rule."""
    reference = scenario.reference
    mine = rates.get(reference)
    if mine is None or draws.get(reference) is None:
        return []
    raw = {gap.cell: gap for gap in result.gaps if gap.metric == judged and gap.pooled}
    gaps = []
    for cell in scenario.cells:
        rate = rates[cell.name]
        if cell.name == reference or draws[cell.name] is None:
            continue
        gap = rate.value - mine.value
        verdict = within_rate_gaps(
            stats.verdict_from_draws(gap, draws[cell.name] - draws[reference])
        )
        found = CorrectedGap(
            cell.name, reference, rate.value, mine.value, verdict, raw.get(cell.name)
        )
        gaps.append(short_of_labels(found, min(rate.labelled, mine.labelled)))
    return gaps


def within_rate_gaps(verdict: stats.GapVerdict) -> stats.GapVerdict:
    """A gap of two rates lies in [−1, 1]: an interval end past it is cut there (the state
    cannot change: 0 stays on the same side)."""
    low, high = max(verdict.ci_low, -1.0), min(verdict.ci_high, 1.0)
    return dataclasses.replace(verdict, ci_low=low, ci_high=high)


def short_of_labels(gap: CorrectedGap, fewest: int) -> CorrectedGap:
    """Never established from fewer than `stats.MIN_RUNS_PER_GROUP` labels in either cell."""
    if fewest >= stats.MIN_RUNS_PER_GROUP:
        return gap
    note = f"{FEW_LABELS} ({fewest} in the fewer)"
    verdict = dataclasses.replace(gap.verdict, verdict=stats.INCONCLUSIVE)
    return dataclasses.replace(gap, verdict=verdict, note=note)
