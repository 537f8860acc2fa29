"""pass^k beside each rate: the share of tasks on which all k runs of a cell succeed.

A rate says how often one run succeeds; pass^k how often an agent can be relied on k times in a
row on the same task, which a rate does not tell (a cell that succeeds on half its runs of every
task and one that always succeeds on half its tasks have one rate, and pass^3 of 12.5% and 50%).
From a task's n runs with c successes, C(c, k) / C(n, k) is the unbiased estimate of its pass^k
(the chance that k runs drawn without replacement all succeed); a cell's pass^k is the
equal-weight mean over its tasks, as its rates are pooled. k is the scenario's repetitions, or
the fewest valid runs of a cell in a task when that is less; below 2 there is no pass^k. A
scenario with one task has none: there it says only whether that task succeeded every time.

Each gap is judged by the rates' rule: each (cell, task) group's runs are resampled with
replacement (the same binomial distribution as a rate's bootstrap, on its own random stream), the
estimate recomputed per draw and pooled, and the gap is established when its 95% interval
excludes 0. pass^k gaps are a view of the rates already judged: they stay outside the Holm
family, as the A/A copy's do, and carry no Holm p. Like every pooled gap, an established one must
hold with its cells' invalid and failed runs counted against it (`unscored`), with the same k.
"""

from __future__ import annotations

import dataclasses
import functools
from math import comb

import numpy as np

from agentab import stats, workers
from agentab.metrics import RATE
from agentab.stats import discrete_laws, resampling
from agentab.stats.strata import ALL, stratum_key
from agentab.synthesis.unscored import KEY_PREFIX, Bound, UnscoredBound, holds
from agentab.synthesis.verdicts import Gap, ScoredValues, _strata, too_few_runs

SMALLEST_K = 2


def pass_hat_k(successes: int, runs: int, k: int) -> float:
    """C(c, k) / C(n, k): the unbiased estimate of the chance that k runs all succeed."""
    if not 0 <= successes <= runs or not 1 <= k <= runs:
        raise ValueError(f"pass^{k} needs 0 <= c <= n and 1 <= k <= n (c={successes}, n={runs})")
    return comb(successes, k) / comb(runs, k)


def metric_name(metric: str, k: int) -> str:
    return f"{metric} pass^{k}"


def choose_k(scenario, groups: list[list]) -> int | None:
    """The scenario's repetitions, or the fewest runs of a group when fewer; None below 2."""
    if not groups or not all(groups):
        return None
    k = min(scenario.repetitions, *(len(group) for group in groups))
    return k if k >= SMALLEST_K else None


def pooled_draws(groups: dict[str, list], k: int, key: str, cell: str) -> tuple[float, np.ndarray]:
    """A cell's pass^k (the mean over its tasks) and its resampled values."""
    estimates, draws = [], []
    for task, values in groups.items():
        successes, runs = resampling.count_successes(values), len(values)
        rng = resampling.generator_for(stratum_key(key, cell, task))
        estimates.append(pass_k_table(runs, k)[successes])
        draws.append(resampled_pass_k(runs, successes, k).draw(rng, resampling.DRAWS))
    return float(np.mean(estimates)), np.mean(draws, axis=0)


@functools.lru_cache(maxsize=4096)
def resampled_pass_k(runs: int, successes: int, k: int) -> discrete_laws.AliasTable:
    """The distribution of pass^k's estimate over resamples of a group: the binomial distribution of
    its count of successes, each count drawn as its estimate."""
    counts = discrete_laws.binomial(runs, successes)
    return discrete_laws.AliasTable(counts.keep, counts.alias, pass_k_table(runs, k)[counts.values])


@functools.lru_cache(maxsize=256)
def pass_k_table(runs: int, k: int) -> np.ndarray:
    """pass^k's estimate at each count of successes among `runs`: the same few sizes come back
    for every cell and task."""
    return np.array([pass_hat_k(c, runs, k) for c in range(runs + 1)])


def task_groups(scored: ScoredValues, cell: str, metric: str, strata: list) -> dict[str, list]:
    """A cell's values of a metric, by task."""
    return {task: scored.of_task(cell, metric, task) for task in strata}


def pass_k_gaps(scored: ScoredValues, scenario, types) -> list[Gap]:
    """The pass^k gap of every rate against the reference, each cell but the A/A copy."""
    (gaps,) = workers.run_all([pass_k_work(scored, scenario, types)])
    return gaps


def pass_k_work(scored: ScoredValues, scenario, types) -> workers.Work:
    """`pass_k_gaps` as jobs, one per rate metric."""
    strata = _strata(scenario)
    if len(scenario.cells) < 2 or len(strata) < 2:
        # With one task, pass^k is 0 or 1: whether that task succeeded every time.
        return workers.Work([], [], lambda found: [])
    cells = [cell.name for cell in scenario.cells if not cell.is_aa]
    rates = [metric for metric in scenario.metrics if types[metric].kind == RATE]
    jobs = [
        functools.partial(metric_pass_k_gaps, scored, scenario, metric, cells, strata)
        for metric in rates
    ]
    return workers.Work(jobs, [len(cells) * len(strata)] * len(jobs), _joined)


def metric_pass_k_gaps(scored: ScoredValues, scenario, metric: str, cells, strata) -> list[Gap]:
    """One rate's pass^k gaps, in the cells' order."""
    reference = scenario.reference
    groups = {cell: task_groups(scored, cell, metric, strata) for cell in cells}
    k = choose_k(scenario, [values for cell in cells for values in groups[cell].values()])
    if k is None:
        return []
    name = metric_name(metric, k)
    value_ref, draws_ref = pooled_draws(groups[reference], k, name, reference)
    found = []
    for cell in cells:
        if cell == reference:
            continue
        value, draws = pooled_draws(groups[cell], k, name, cell)
        verdict = stats.verdict_from_draws(value - value_ref, draws - draws_ref, (-1.0, 1.0))
        gap = Gap(
            cell=cell,
            reference=reference,
            metric=name,
            kind=RATE,
            n_cell=runs_of(groups[cell]),
            n_ref=runs_of(groups[reference]),
            value_cell=value,
            value_ref=value_ref,
            verdict=verdict,
            p_holm=None,
            task=ALL,
            fewest_in_a_task=min(map(len, [*groups[cell].values(), *groups[reference].values()])),
        )
        found.append(bounded(too_few_runs(gap), scored, strata, metric, k))
    return found


def bounded(gap: Gap, scored: ScoredValues, strata: list, metric: str, k: int) -> Gap:
    """The gap, inconclusive with its note unless it stays established with each invalid or
    failed run of its cells counted against it (the cell's as failures, the reference's as
    successes, for a gap above zero; the other way round below)."""
    bound = UnscoredBound(scored, scored.unscored, {}, strata, {})
    mine, theirs = bound.counts(gap.cell), bound.counts(gap.reference)
    if not gap.verdict.is_established or not (mine or theirs):
        return gap
    above = gap.value_cell > gap.value_ref
    pools = [
        dict(zip(strata, bound.groups(cell, metric, imputed), strict=True))
        for cell, imputed in ((gap.cell, not above), (gap.reference, above))
    ]
    key = f"{KEY_PREFIX}:{gap.metric}"
    value, draws = pooled_draws(pools[0], k, key, gap.cell)
    value_ref, draws_ref = pooled_draws(pools[1], k, key, gap.reference)
    verdict = stats.verdict_from_draws(value - value_ref, draws - draws_ref, (-1.0, 1.0))
    if holds(gap, verdict):
        return gap
    note = Bound(mine, theirs, verdict, RATE).note()
    inconclusive = dataclasses.replace(gap.verdict, verdict=stats.INCONCLUSIVE)
    return dataclasses.replace(gap, verdict=inconclusive, note=note)


def _joined(found: list[list[Gap]]) -> list[Gap]:
    return [gap for gaps in found for gap in gaps]


def runs_of(groups: dict[str, list]) -> int:
    return sum(map(len, groups.values()))
