"""Benchmark: `agentab synthesize` on 10 000 measures.json files, 30 cells x 10 metrics, against
reading those files (target: 10x).

    python benchmarks/bench_synthesize.py            # 10 020 runs, 3 timings of each, medians
    python benchmarks/bench_synthesize.py --quick    # 30 cells x 10 runs (smoke test)

The results folder is written to a temporary directory first (not timed): a 6 x 5 grid, 334
repetitions, five boolean and five numeric metrics, a few invalid and failed runs. Then, in
turns (so that a burst of load weighs on both alike): the reference, a fresh interpreter that
reads and parses every measures.json and nothing else; and `agentab synthesize` on the folder,
as a person or the workflow runs it. The exit status is non-zero only when the synthesis
fails, never on a timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agentab.scenario.cells import slugify

TARGET_RATIO = 10.0
# The reference: every measures.json read and parsed, in a fresh interpreter as the synthesis.
READ_ONLY = """
import json, os, sys
count = 0
for root, folders, files in os.walk(os.path.join(sys.argv[1], "runs")):
    folders.sort()
    if "measures.json" in files:
        with open(os.path.join(root, "measures.json"), "rb") as handle:
            json.loads(handle.read())
        count += 1
print(count)
"""
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

[protocol.limits]
memory = "2G"
processes = 256
disk = "1G"
patch = "1M"

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


def timed(command: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 runs per cell")
    parser.add_argument("--repeats", type=int, default=3, help="timings of each, in turns")
    args = parser.parse_args(argv)
    repetitions = 10 if args.quick else 334
    reads, syntheses = [], []
    with tempfile.TemporaryDirectory(prefix="bench-synthesize-") as scratch:
        folder = Path(scratch)
        files = write_results(folder, repetitions)
        for _ in range(max(1, args.repeats)):
            seconds, read = timed([sys.executable, "-c", READ_ONLY, str(folder)])
            if read.returncode != 0 or read.stdout.strip() != str(files):
                print(f"bench_synthesize: FAILED: the reading reference: {read.stderr}")
                return 1
            reads.append(seconds)
            seconds, run = timed([sys.executable, "-m", "agentab.cli", "synthesize", str(folder)])
            if run.returncode != 0:
                print(f"bench_synthesize: FAILED: agentab synthesize: {run.stderr}{run.stdout}")
                return 1
            syntheses.append(seconds)
        summary = run.stdout.splitlines()[:2]
    read_s, synthesis_s = statistics.median(reads), statistics.median(syntheses)
    ratio = synthesis_s / read_s
    print(
        f"bench_synthesize: {files} measures.json, {len(AXIS_A) * len(AXIS_B)} cells x "
        f"{len(BOOLEAN_METRICS) + len(NUMBER_METRICS)} metrics ({'; '.join(summary)})\n"
        f"  reading the measures.json files (reference): {read_s:.3f} s "
        f"(median of {len(reads)}: {', '.join(f'{s:.2f}' for s in reads)})\n"
        f"  agentab synthesize: {synthesis_s:.3f} s "
        f"(median of {len(syntheses)}: {', '.join(f'{s:.2f}' for s in syntheses)})\n"
        f"  ratio: {ratio:.2f}x, target {TARGET_RATIO}x: "
        f"{'met' if ratio <= TARGET_RATIO else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
