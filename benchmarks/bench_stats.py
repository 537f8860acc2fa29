"""Benchmark: the verdicts of 300 gaps at 10 000 bootstrap draws each (budget: 2 s).

    python benchmarks/bench_stats.py            # the full figure, checked against the budget
    python benchmarks/bench_stats.py --quick    # a tenth of the gaps, no budget (smoke test)

Half the gaps are rates and half are medians, 10 runs per cell as in a typical matrix.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from agentab import stats

BUDGET_S = 2.0
FULL_GAPS = 300


def make_groups(count: int, runs: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(1)
    groups = []
    for index in range(count):
        if index % 2:
            groups.append(("rate", rng.random(runs) < 0.4, rng.random(runs) < 0.6))
        else:
            groups.append(("median", rng.poisson(6, runs) * 1.0, rng.poisson(8, runs) * 1.0))
    return groups


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 gaps, no budget check")
    parser.add_argument("--runs", type=int, default=10, help="runs per cell (default 10)")
    args = parser.parse_args(argv)
    count = FULL_GAPS // 10 if args.quick else FULL_GAPS
    groups = make_groups(count, args.runs)
    start = time.perf_counter()
    verdicts = [
        stats.bootstrap_gap(kind, cell, reference, cell_key=f"c{i}", reference_key=f"r{i}")
        for i, (kind, cell, reference) in enumerate(groups)
    ]
    elapsed = time.perf_counter() - start
    stats.holm([verdict.p for verdict in verdicts])
    established = sum(verdict.is_established for verdict in verdicts)
    print(
        f"bench_stats: {count} gaps x {stats.DRAWS} draws, {args.runs} runs per cell: "
        f"{elapsed:.3f} s ({1000 * elapsed / count:.2f} ms per gap), {established} established"
    )
    if args.quick:
        return 0
    within = elapsed <= BUDGET_S
    print(f"budget {BUDGET_S} s: {'ok' if within else 'EXCEEDED'}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
