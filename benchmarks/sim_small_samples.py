"""Simulation: how often the verdict rule calls a gap established when there is none, by runs
per group. It is where `stats.MIN_RUNS_PER_GROUP` comes from (docs/synthesis.md keeps the table).

    python benchmarks/sim_small_samples.py            # 2 000 null experiments per size
    python benchmarks/sim_small_samples.py --quick    # 200 per size (smoke test)

Under the null hypothesis both groups come from one distribution; every "established" is a
false positive. A percentile bootstrap of one value has no spread, so with one run per group
any two different values look certain. The rule must hold its 5% at every size it allows: the
smallest size from which the false-positive rate stays at or under 5% for every distribution
tried (and never fewer than 3) is the minimum.
"""

from __future__ import annotations

import argparse

import numpy as np

from agentab import stats
from agentab.metrics import MEDIAN, RATE

SIZES = range(1, 11)
LEVEL = 0.05
# Null distributions: booleans at several rates, numbers continuous, skewed and discrete.
DISTRIBUTIONS = {
    "boolean p=0.5": (RATE, lambda rng, n: rng.random(n) < 0.5),
    "boolean p=0.2": (RATE, lambda rng, n: rng.random(n) < 0.2),
    "boolean p=0.05": (RATE, lambda rng, n: rng.random(n) < 0.05),
    "number normal": (MEDIAN, lambda rng, n: rng.normal(10, 2, n)),
    "number skewed": (MEDIAN, lambda rng, n: rng.lognormal(1, 1, n)),
    "number turns": (MEDIAN, lambda rng, n: rng.poisson(6, n).astype(float)),
}


def false_positive_rate(kind, draw, n: int, experiments: int, draws: int) -> float:
    rng = np.random.default_rng(n * 7919 + 17)
    established = 0
    for experiment in range(experiments):
        cell, reference = draw(rng, n), draw(rng, n)
        verdict = stats.bootstrap_gap(
            kind,
            list(cell),
            list(reference),
            cell_key=f"c{experiment}",
            reference_key=f"r{experiment}",
            draws=draws,
        )
        established += verdict.is_established
    return established / experiments


def minimum_size(table: dict[str, list[float]]) -> int:
    for index, n in enumerate(SIZES):
        if all(all(rate <= LEVEL for rate in rates[index:]) for rates in table.values()):
            return max(3, n)
    return max(SIZES) + 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 experiments per size")
    args = parser.parse_args(argv)
    experiments = 200 if args.quick else 2000
    draws = 2000 if args.quick else stats.DRAWS
    table = {
        name: [false_positive_rate(kind, draw, n, experiments, draws) for n in SIZES]
        for name, (kind, draw) in DISTRIBUTIONS.items()
    }
    width = max(len(name) for name in table)
    print(f"false-positive rate of 'established' under the null ({experiments} experiments)")
    print(f"{'runs per group':<{width}}  " + "  ".join(f"{n:>5}" for n in SIZES))
    for name, rates in table.items():
        print(f"{name:<{width}}  " + "  ".join(f"{rate:>5.1%}" for rate in rates))
    found = minimum_size(table)
    print(f"smallest size at or under {LEVEL:.0%} from there on: {found} runs per group")
    print(f"stats.MIN_RUNS_PER_GROUP = {stats.MIN_RUNS_PER_GROUP}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
