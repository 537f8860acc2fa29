"""Simulation: how often the pooled verdict over several tasks calls a gap established when there
is none, by number of tasks and runs per task. docs/synthesis.md keeps the table.

    python benchmarks/sim_tasks.py            # 1 000 null experiments per cell of the table
    python benchmarks/sim_tasks.py --quick    # 100 per cell (smoke test)

Under the null both cells draw each task's runs from that task's own distribution; the tasks
differ (one easy, one hard, ...), as real tasks do. Every "established" is a false positive.
The verdict is the synthesis's own: each (cell, task) group resampled on its own
(`strata.resample_group`: with several tasks, a rate at its smoothed value), the pooled draws the mean of the tasks' (`strata.pooled_draws`), the
95% percentile interval, and no gap established from fewer than `stats.MIN_RUNS_PER_GROUP`
valid runs per cell over all its tasks, or `stats.MIN_RUNS_PER_TASK` in any task. The target: at most 5% everywhere.
"""

from __future__ import annotations

import argparse

import numpy as np

from agentab.metrics import MEDIAN, RATE
from agentab.synthesis import stats
from agentab.synthesis.strata import pooled_draws, smoothed_rate_draws

TASKS = range(1, 6)
RUNS_PER_TASK = (2, 3, 5, 10)
LEVEL = 0.05
# Per task t of T: booleans at rates spread from 0.2 to 0.8; turns with means from 4 to 12.
DISTRIBUTIONS = {
    "boolean": (RATE, lambda rng, n, t, T: rng.random(n) < 0.2 + 0.6 * t / max(1, T - 1)),
    "turns": (MEDIAN, lambda rng, n, t, T: rng.poisson(4 + 8 * t / max(1, T - 1), n) * 1.0),
}


def resample(kind: str, values: list, key: str, tasks: int) -> np.ndarray:
    """As `strata.resample_group` does: several tasks smooth a rate, one task does not."""
    rng = stats.generator_for(key)
    if tasks > 1 and kind == RATE:
        return smoothed_rate_draws(values, rng)
    return stats.resample_statistic(kind, values, rng)


def never_established(tasks: int, n: int) -> bool:
    """The rule's minimums: runs per cell over its tasks, and runs per cell in each task."""
    return tasks * n < stats.MIN_RUNS_PER_GROUP or (tasks > 1 and n < stats.MIN_RUNS_PER_TASK)


def false_positive_rate(kind, draw, tasks: int, n: int, experiments: int) -> float:
    rng = np.random.default_rng(tasks * 7919 + n)
    if never_established(tasks, n):
        return 0.0
    established = 0
    for experiment in range(experiments):
        pooled = []
        observed = []
        for cell in ("cell", "reference"):
            groups = [draw(rng, n, t, tasks) for t in range(tasks)]
            observed.append(np.mean([stats.statistic(kind, list(g)) for g in groups]))
            pooled.append(
                pooled_draws(
                    [
                        resample(kind, list(g), f"{cell}{experiment}.{t}", tasks)
                        for t, g in enumerate(groups)
                    ]
                )
            )
        verdict = stats.verdict_from_draws(observed[0] - observed[1], pooled[0] - pooled[1])
        established += verdict.is_established
    return established / experiments


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 experiments per cell")
    args = parser.parse_args(argv)
    experiments = 100 if args.quick else 1000
    print(f"false positives of the pooled verdict under the null, {experiments} experiments each")
    print(
        "| metric | runs per task | " + " | ".join(f"{t} task{'s' * (t > 1)}" for t in TASKS) + " |"
    )
    print("| --- | --- |" + " --- |" * len(TASKS))
    worst = 0.0
    for name, (kind, draw) in DISTRIBUTIONS.items():
        for n in RUNS_PER_TASK:
            rates = [false_positive_rate(kind, draw, t, n, experiments) for t in TASKS]
            worst = max(worst, *rates)
            shown = [
                "—" if never_established(t, n) else f"{100 * rate:.1f}%"
                for t, rate in zip(TASKS, rates, strict=True)
            ]
            print(f"| {name} | {n} | " + " | ".join(shown) + " |")
    print(f"worst: {100 * worst:.1f}% (target: at most {100 * LEVEL:.0f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
