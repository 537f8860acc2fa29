"""Benchmark: `synthesize` over 10 000 measures.json files, 30 cells x 10 metrics (budget: 5 s).

    python benchmarks/bench_synthesize.py            # the full figure, checked against the budget
    python benchmarks/bench_synthesize.py --quick    # 30 cells x 10 runs, no budget (smoke test)

The results folder is written to a temporary directory first (not timed): a 6 x 5 grid, 334
repetitions, five boolean and five numeric metrics, a few invalid and failed runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agentab.cells import slugify
from agentab.synthesis import synthesize

BUDGET_S = 5.0
AXIS_A = [f"a{i}" for i in range(6)]
AXIS_B = [f"b{i}" for i in range(5)]
BOOLEAN_METRICS = [f"passes_{i}" for i in range(5)]
NUMBER_METRICS = [f"count_{i}" for i in range(3)] + [f"seconds_{i}" for i in range(2)]

SCENARIO = """\
[scenario]
name = "bench"
question = "How long does a synthesis of a large matrix take?"

[task]
prompt = "Fix it."

[etalon]
repo = "calc.bundle"
tag = "v1.0"

[agent]
harness = "pi"
version = "1.6.0"
provider = "offline"
model = "demo"
thinking = "off"
timeout = "2m"

[protocol]
repetitions = {repetitions}

[axes]
a = {axis_a}
b = {axis_b}

{deltas}
[validation]
metrics = {metrics}

[validators.tests]
mode = "script"
run = ["validators/tests.py"]
"""


def write_results(folder: Path, repetitions: int) -> int:
    deltas = "".join(
        f'[deltas.a.{value}]\ncontext_files = ["bricks/{value}.md"]\n\n' for value in AXIS_A[1:]
    ) + "".join(
        f'[deltas.b.{value}]\nextensions = ["bricks/{value}.ts"]\n\n' for value in AXIS_B[1:]
    )
    (folder / "scenario.toml").write_text(
        SCENARIO.format(
            repetitions=repetitions,
            axis_a=json.dumps(AXIS_A),
            axis_b=json.dumps(AXIS_B),
            deltas=deltas,
            metrics=json.dumps(BOOLEAN_METRICS + NUMBER_METRICS),
        ),
        encoding="utf-8",
    )
    rng = np.random.default_rng(3)
    written = 0
    for index, (a, b) in enumerate((a, b) for a in AXIS_A for b in AXIS_B):
        name = f"{a} · {b}"
        for rep in range(1, repetitions + 1):
            status = "valid" if rng.random() > 0.03 else str(rng.choice(["invalid", "failed"]))
            metrics = {m: bool(rng.random() < 0.3 + 0.01 * index) for m in BOOLEAN_METRICS}
            metrics |= {m: int(rng.poisson(6 + index % 4)) for m in NUMBER_METRICS[:3]}
            metrics |= {m: float(rng.gamma(4, 10)) for m in NUMBER_METRICS[3:]}
            run_dir = folder / "runs" / slugify(name) / f"r{rep:02d}"
            run_dir.mkdir(parents=True)
            measures = {
                "schema": 1, "scenario": "bench", "cell": name, "rep": rep,
                "run": f"{slugify(name)}/r{rep:02d}", "status": status,
                "metrics": metrics if status == "valid" else {},
                "extra": {"lint_warnings": int(rng.integers(0, 5))}, "reasons": {},
                "problems": [] if status == "valid" else [f"{status} for the benchmark"],
                "pending": [],
                "provenance": {"harness": "pi", "harness_version": "1.6.0", "provider": "offline",
                               "model": "demo", "thinking": "off", "etalon_sha": "abc123",
                               "duration_s": 30.0, "tokens": {"input": 1000, "output": 200},
                               "cost_usd": 0.0},
            }  # fmt: skip
            (run_dir / "measures.json").write_text(json.dumps(measures), encoding="utf-8")
            written += 1
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 runs per cell, no budget check")
    args = parser.parse_args(argv)
    repetitions = 10 if args.quick else 334
    with tempfile.TemporaryDirectory(prefix="bench-synthesize-") as scratch:
        folder = Path(scratch)
        files = write_results(folder, repetitions)
        start = time.perf_counter()
        result = synthesize(folder)
        elapsed = time.perf_counter() - start
    print(
        f"bench_synthesize: {files} measures.json, {len(AXIS_A) * len(AXIS_B)} cells x "
        f"{len(BOOLEAN_METRICS) + len(NUMBER_METRICS)} metrics, {len(result.gaps)} gaps: "
        f"{elapsed:.3f} s, {len(result.established)} established"
    )
    if args.quick:
        return 0
    within = elapsed <= BUDGET_S
    print(f"budget {BUDGET_S} s: {'ok' if within else 'EXCEEDED'}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
