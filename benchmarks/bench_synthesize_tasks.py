"""Benchmark: `agentab synthesize` on 10 000 measures.json of a scenario with several tasks,
against reading those files (target: 10x, as bench_synthesize.py's one-task matrix).

    python benchmarks/bench_synthesize_tasks.py            # 30 cells x 5 tasks x 67 repetitions
    python benchmarks/bench_synthesize_tasks.py --quick    # 30 cells x 5 tasks x 3 (smoke test)

The matrix and the metrics are bench_synthesize.py's (five boolean, five numeric); each cell
runs five tasks of different difficulty. With several tasks a pooled gap is judged from 10 000
shuffles of each task's runs between its two cells, which costs more than the one-task
bootstrap (a median's shuffle moves every run of the task). The exit status is non-zero only
when the synthesis fails, never on a timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_synthesize as one_task  # noqa: E402  (a sibling script, not a package)

from agentab.scenario.cells import slugify  # noqa: E402

TASKS = [f"t{i}" for i in range(5)]


def write_results(folder: Path, repetitions: int) -> int:
    """bench_synthesize's folder, with [tasks.t0] ... [tasks.t4] instead of [task]."""
    one_task.write_results(folder, 1)
    scenario = folder / "scenario.toml"
    tasks = "\n\n".join(f'[tasks.{task}]\nprompt = "Fix {task}."' for task in TASKS)
    text = scenario.read_text(encoding="utf-8").replace('[task]\nprompt = "Fix it."', tasks)
    scenario.write_text(text.replace("repetitions = 1\n", f"repetitions = {repetitions}\n"))
    for old in (folder / "runs").iterdir():
        for path in sorted(old.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        old.rmdir()
    rng = np.random.default_rng(5)
    written = 0
    cells = [f"{a} · {b}" for a in one_task.AXIS_A for b in one_task.AXIS_B]
    for index, name in enumerate(cells):
        for level, task in enumerate(TASKS):
            for rep in range(1, repetitions + 1):
                metrics = {
                    m: bool(rng.random() < 0.15 * level + 0.01 * index)
                    for m in one_task.BOOLEAN_METRICS
                }
                metrics |= {
                    m: int(rng.poisson((3 + index % 4) * (1 + level)))
                    for m in one_task.NUMBER_METRICS[:3]
                }
                metrics |= {
                    m: float(rng.gamma(4, 10 * (1 + 3 * level)))
                    for m in one_task.NUMBER_METRICS[3:]
                }
                run = f"{slugify(name)}--{task}/r{rep:02d}"
                measures = {
                    "schema": 1, "scenario": "bench", "cell": name, "task": task, "rep": rep,
                    "run": run, "status": "valid", "metrics": metrics, "extra": {},
                    "reasons": {}, "problems": [], "pending": [],
                    "provenance": {"harness": "pi", "provider": "offline", "cost_usd": 0.0},
                }  # fmt: skip
                (folder / "runs" / run).mkdir(parents=True)
                (folder / "runs" / run / "measures.json").write_text(json.dumps(measures))
                written += 1
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repetitions per cell and task")
    parser.add_argument("--repeats", type=int, default=3, help="timings of each, in turns")
    args = parser.parse_args(argv)
    repetitions = 3 if args.quick else 67
    reads, syntheses = [], []
    with tempfile.TemporaryDirectory(prefix="bench-synthesize-tasks-") as scratch:
        folder = Path(scratch)
        files = write_results(folder, repetitions)
        for _ in range(max(1, args.repeats)):
            seconds, read = one_task.timed([sys.executable, "-c", one_task.READ_ONLY, str(folder)])
            if read.returncode != 0 or read.stdout.strip() != str(files):
                print(f"bench_synthesize_tasks: FAILED: the reading reference: {read.stderr}")
                return 1
            reads.append(seconds)
            command = [sys.executable, "-m", "agentab.cli", "synthesize", str(folder)]
            seconds, run = one_task.timed(command)
            if run.returncode != 0:
                print(
                    f"bench_synthesize_tasks: FAILED: agentab synthesize: {run.stderr}{run.stdout}"
                )
                return 1
            syntheses.append(seconds)
    read_s, synthesis_s = statistics.median(reads), statistics.median(syntheses)
    ratio = synthesis_s / read_s
    print(
        f"bench_synthesize_tasks: {files} measures.json, {len(one_task.AXIS_A) * len(one_task.AXIS_B)}"
        f" cells x {len(TASKS)} tasks x {repetitions} repetitions, 10 metrics\n"
        f"  reading the measures.json files (reference): {read_s:.3f} s "
        f"(median of {len(reads)}: {', '.join(f'{s:.2f}' for s in reads)})\n"
        f"  agentab synthesize: {synthesis_s:.3f} s "
        f"(median of {len(syntheses)}: {', '.join(f'{s:.2f}' for s in syntheses)})\n"
        f"  ratio: {ratio:.2f}x, target {one_task.TARGET_RATIO}x: "
        f"{'met' if ratio <= one_task.TARGET_RATIO else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
