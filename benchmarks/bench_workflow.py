"""Benchmark: how the Snakemake workflow schedules a large matrix (default: 5 000 runs).

    python benchmarks/bench_workflow.py                  # 5 000 runs: dry run, then every job
    python benchmarks/bench_workflow.py --quick          # 200 runs (smoke test, under a minute)
    python benchmarks/bench_workflow.py --runs 1000      # any size
    python benchmarks/bench_workflow.py --compare-ilp    # also: the profile vs the ILP default
                                                         # on 300 runs (--compare-runs)

A user project is built in a temporary directory: the repository's Snakefile, rules/, config/
and profiles/, and a scenario made from scenarios/demo whose matrix has the asked number of
runs (cells x repetitions; the demo's validators, so 6 jobs per run). In that copy only, every
rule's `shell:` command becomes trivial (`touch` its outputs):
the DAG, the wildcards, the params, the resources and the profile's scheduler settings are
those of the real workflow, and what is timed is Snakemake's own work, not the steps'.

Figures: the dry run (`snakemake -n`, the DAG build); the full execution (jobs, wall time,
jobs/s, the time to the first job, the job rate over each fifth of the jobs,
the longest pause between two finished jobs, the peak RSS of Snakemake); the dry run once all
is up to date. The exit status is non-zero only when something fails, never on a timing.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "scenarios" / "demo"
SCENARIO_NAME = "bench"
DEFAULT_RUNS = 5000
QUICK_RUNS = 200
COMPARE_RUNS = 300
# Grid shapes (values of the two axes) by matrix size: the repetitions make up the rest.
SHAPES = ((1000, (10, 5)), (10, (5, 2)), (0, (1, 1)))
PROGRESS = re.compile(r"^(\d+) of (\d+) steps \(")
JOB_START = re.compile(r"^(local)?rule \w+:")
PROFILE_SCHEDULER_KEYS = ("scheduler:", "scheduler-subsample:")
# What a rule runs: replaced by a trivial `shell:` command in the copy.
STEP_DIRECTIVES = ("shell:", "script:", "run:")


@dataclass
class Invocation:
    """One snakemake invocation: its wall time, what it printed, its peak RSS."""

    label: str
    wall_s: float
    returncode: int
    peak_rss_mb: float
    first_job_s: float | None = None
    done: list[tuple[float, int]] = field(default_factory=list)  # (seconds, steps done)
    total_steps: int | None = None
    log: Path | None = None

    @property
    def jobs(self) -> int:
        return self.done[-1][1] if self.done else 0

    def rate(self, start_fraction: float, end_fraction: float) -> float | None:
        """Jobs per second between two fractions of the finished jobs."""
        if not self.total_steps or len(self.done) < 2:
            return None
        lo, hi = self.total_steps * start_fraction, self.total_steps * end_fraction
        span = [(t, n) for t, n in self.done if lo <= n <= hi]
        if len(span) < 2 or span[-1][0] <= span[0][0]:
            return None
        return (span[-1][1] - span[0][1]) / (span[-1][0] - span[0][0])

    def rates_by_fifth(self) -> list[float | None]:
        """A steady rate from the first fifth to the last one is a scheduler that keeps up."""
        return [self.rate(i / 5, (i + 1) / 5) for i in range(5)]

    def longest_pause_s(self) -> float | None:
        if len(self.done) < 2:
            return None
        return max(b[0] - a[0] for a, b in zip(self.done, self.done[1:], strict=False))


# ---------------------------------------------------------------------------- the project


def grid_shape(runs: int) -> tuple[int, int, int]:
    """(values of axis `context`, values of axis `wording`, repetitions) for about `runs` runs."""
    for at_least, (a, b) in SHAPES:
        if runs >= at_least:
            return a, b, max(1, math.ceil(runs / (a * b)))
    raise AssertionError("unreachable")


def scenario_text(demo_text: str, n_context: int, n_wording: int, repetitions: int) -> str:
    """The demo scenario with its matrix replaced: two axes, a delta per non-baseline value."""
    start, end = demo_text.find("[protocol]"), demo_text.find("[validation]")
    if start < 0 or end < start or 'name = "demo"' not in demo_text:
        raise SystemExit(
            'bench_workflow: scenarios/demo/scenario.toml no longer has `name = "demo"`, '
            "[protocol] and then [validation]; update scenario_text() in this benchmark"
        )
    context = ["none"] + [f"c{i}" for i in range(1, n_context)]
    wording = ["plain"] + [f"w{i}" for i in range(1, n_wording)]
    limits = next(line for line in demo_text.splitlines() if line.startswith("limits = "))
    matrix = [f"[protocol]\nrepetitions = {repetitions}\n{limits}\n", "[axes]"]
    matrix.append("context = [" + ", ".join(f'"{v}"' for v in context) + "]")
    matrix.append("wording = [" + ", ".join(f'"{v}"' for v in wording) + "]\n")
    for value in context[1:]:
        matrix.append(f'[deltas.context.{value}]\ncontext_files = ["bricks/{value}.md"]\n')
    for value in wording[1:]:
        matrix.append(f'[deltas.wording.{value}]\nprompt = "Fix the bug ({value})."\n')
    text = demo_text[:start] + "\n".join(matrix) + "\n" + demo_text[end:]
    return text.replace('name = "demo"', f'name = "{SCENARIO_NAME}"', 1)


def trivial_shell(rule: str) -> str:
    return "touch {output}"


def trivialize(smk: str) -> tuple[str, list[str]]:
    """Each rule's command (`shell:`, `script:` or `run:`) replaced by a trivial `shell:` one."""
    lines = smk.splitlines()
    out: list[str] = []
    replaced: list[str] = []
    rule = None
    i = 0
    while i < len(lines):
        line = lines[i]
        match = re.match(r"^rule (\w+):", line)
        if match:
            rule = match.group(1)
        if line.strip() in STEP_DIRECTIVES and rule is not None:
            indent = len(line) - len(line.lstrip())
            out.append(" " * indent + "shell:")
            out.append(" " * (indent + 4) + f'"{trivial_shell(rule)}"')
            replaced.append(rule)
            i += 1
            while i < len(lines) and (
                not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
            ):
                if not lines[i].strip():
                    break
                i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out) + "\n", replaced


def build_project(root: Path, runs: int) -> dict:
    """A user project in `root` whose every job is trivial; returns what it holds."""
    shutil.copy2(REPO / "Snakefile", root / "Snakefile")
    for folder in ("rules", "config", "profiles", "envs", "scripts"):
        if (REPO / folder).is_dir():
            shutil.copytree(REPO / folder, root / folder)
    rules: list[str] = []
    for smk in sorted((root / "rules").glob("*.smk")):
        text, replaced = trivialize(smk.read_text(encoding="utf-8"))
        smk.write_text(text, encoding="utf-8")
        rules += replaced
    n_context, n_wording, repetitions = grid_shape(runs)
    scenario_dir = root / "scenarios" / SCENARIO_NAME
    shutil.copytree(DEMO, scenario_dir)
    demo_text = (DEMO / "scenario.toml").read_text(encoding="utf-8")
    (scenario_dir / "scenario.toml").write_text(
        scenario_text(demo_text, n_context, n_wording, repetitions), encoding="utf-8"
    )
    for i in range(1, n_context):
        (scenario_dir / "bricks" / f"c{i}.md").write_text(f"Context brick {i}.\n")
    (root / "config" / "config.yaml").write_text(
        f"scenarios:\n  - scenarios/{SCENARIO_NAME}/scenario.toml\n"
        "results: results\nstate: .agentab\ncredentials: null\njudge_base_url: null\n",
        encoding="utf-8",
    )
    # The ILP default: the same profile without its scheduler settings.
    ilp = root / "profiles" / "ilp-default"
    ilp.mkdir()
    profile = (root / "profiles" / "default" / "config.yaml").read_text(encoding="utf-8")
    kept = [ln for ln in profile.splitlines() if not ln.startswith(PROFILE_SCHEDULER_KEYS)]
    (ilp / "config.yaml").write_text("\n".join(kept) + "\n", encoding="utf-8")

    from agentab.scenario import load_scenario

    scenario = load_scenario(scenario_dir / "scenario.toml")
    scored = [n for n, s in scenario.validators.items() if s.mode != "form"]
    forms = [n for n, s in scenario.validators.items() if s.mode == "form"]
    harnesses = {(c.agent.harness, c.agent.version) for c in scenario.cells}
    n_runs = len(scenario.cells) * scenario.repetitions
    # Per run: agent run (it clones), one job per scored validator, measures. Per scenario: freeze,
    # synthesis, report, one blank form per form validator; per harness: its install; and `all`.
    jobs = n_runs * (2 + len(scored)) + 3 + len(forms) + len(harnesses) + 1
    return {
        "cells": len(scenario.cells),
        "repetitions": scenario.repetitions,
        "runs": n_runs,
        "jobs": jobs,
        "validators": len(scored),
        "rules": rules,
        "profile": [ln for ln in profile.splitlines() if ln.startswith(PROFILE_SCHEDULER_KEYS)],
    }


# ---------------------------------------------------------------------------- running


def snakemake(root: Path, label: str, args: list[str]) -> Invocation:
    """Run snakemake in `root`, timestamping its progress lines; its output goes to a log."""
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        str(os.cpu_count() or 1),
        "--quiet=host",
        *args,
    ]
    log = root / f"{label}.log"
    start = time.perf_counter()
    result = Invocation(label=label, wall_s=0.0, returncode=-1, peak_rss_mb=0.0, log=log)
    with log.open("w", encoding="utf-8") as sink:
        sink.write("$ " + " ".join(command) + "\n")
        process = subprocess.Popen(
            command,
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert process.stdout is not None
        for line in process.stdout:
            now = time.perf_counter() - start
            sink.write(line)
            if result.first_job_s is None and JOB_START.match(line):
                result.first_job_s = now
            progress = PROGRESS.match(line)
            if progress:
                result.done.append((now, int(progress.group(1))))
                result.total_steps = int(progress.group(2))
        # wait4 (not wait) gives this child's own resource usage: its peak RSS.
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    result.wall_s = time.perf_counter() - start
    result.returncode = process.returncode
    # ru_maxrss is in kilobytes on Linux.
    result.peak_rss_mb = usage.ru_maxrss / 1024
    return result


def dry_run_jobs(log: Path) -> int | None:
    """The `total` row of the job stats a dry run prints."""
    for line in log.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "total" and parts[1].isdigit():
            return int(parts[1])
    return None


def check_outputs(root: Path, project: dict) -> list[str]:
    results = root / "results" / SCENARIO_NAME
    problems = []
    measures = sum(1 for _ in results.glob("runs/*/*/measures.json"))
    if measures != project["runs"]:
        problems.append(f"{measures} measures.json written, {project['runs']} expected")
    if not (results / "synthesis.md").exists():
        problems.append("no synthesis.md written")
    return problems


# ---------------------------------------------------------------------------- reporting


def load() -> str:
    """The 1-minute load average: figures taken on a busy machine are slower."""
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "-"


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def print_table(title: str, rows: list[tuple[str, str]]) -> None:
    width = max(len(name) for name, _ in rows)
    print(f"\n{title}")
    print("-" * len(title))
    for name, value in rows:
        print(f"  {name.ljust(width)}  {value}")


def execution_rows(run: Invocation) -> list[tuple[str, str]]:
    jobs_per_s = run.jobs / run.wall_s if run.wall_s else None
    return [
        ("jobs done", f"{run.jobs:,} of {run.total_steps or 0:,}"),
        ("wall time", f"{fmt(run.wall_s)} s"),
        ("jobs/s (overall)", fmt(jobs_per_s)),
        ("first job started after", f"{fmt(run.first_job_s)} s"),
        ("jobs/s by fifth of the jobs", " / ".join(fmt(r, 0) for r in run.rates_by_fifth())),
        ("longest pause between jobs", f"{fmt(run.longest_pause_s(), 2)} s"),
        ("peak RSS of snakemake", f"{fmt(run.peak_rss_mb, 0)} MB"),
    ]


def failed(run: Invocation) -> str | None:
    if run.returncode != 0:
        return f"{run.label}: snakemake exited with {run.returncode} (see {run.log})"
    return None


# ---------------------------------------------------------------------------- main


def bench_size(runs: int, keep: bool) -> tuple[list[str], dict]:
    """The dry run, the full execution and the up-to-date dry run at `runs` runs."""
    problems: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="bench-workflow-"))
    try:
        project = build_project(root, runs)
        print(
            f"bench_workflow: {project['runs']:,} runs ({project['cells']} cells x "
            f"{project['repetitions']} repetitions, {project['validators']} scored validators), "
            f"{project['jobs']:,} jobs expected; profile: {', '.join(project['profile'])}; "
            f"cores: {os.cpu_count()}; load average {load()}; project in {root}",
            flush=True,
        )
        dry = snakemake(root, "dry-run", ["-n"])
        problems.append(failed(dry))
        planned = dry_run_jobs(dry.log)
        if planned != project["jobs"]:
            problems.append(f"dry run plans {planned} jobs, {project['jobs']} expected")
        print(f"  dry run: {dry.wall_s:.1f} s, {planned} jobs", flush=True)
        full = snakemake(root, "execute", [])
        problems.append(failed(full))
        if full.jobs != project["jobs"]:
            problems.append(f"{full.jobs} jobs done, {project['jobs']} expected")
        problems += check_outputs(root, project)
        print(f"  execution: {full.wall_s:.1f} s, {full.jobs} jobs", flush=True)
        again = snakemake(root, "up-to-date", ["-n"])
        problems.append(failed(again))
        up_to_date = "Nothing to be done" in again.log.read_text(encoding="utf-8")
        if not up_to_date:
            problems.append("a second dry run still finds jobs to run")
        rows = [
            ("runs", f"{project['runs']:,} ({project['cells']} cells x {project['repetitions']})"),
            ("jobs planned (dry run)", f"{planned or 0:,}"),
            ("dry run (DAG build)", f"{fmt(dry.wall_s)} s"),
            ("dry run, peak RSS", f"{fmt(dry.peak_rss_mb, 0)} MB"),
            *execution_rows(full),
            ("dry run once up to date", f"{fmt(again.wall_s)} s"),
            ("load average at the end", load()),
        ]
        print_table(f"Workflow at {project['runs']:,} runs (profiles/default, trivial jobs)", rows)
    finally:
        if keep:
            print(f"  kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return [p for p in problems if p], project


def compare_schedulers(runs: int, keep: bool) -> list[str]:
    """The profile's scheduler vs Snakemake's ILP default, each on a fresh copy."""
    problems: list[str] = []
    variants = [("profile", "profiles/default"), ("ilp-default", "profiles/ilp-default")]
    results: dict[str, Invocation] = {}
    project: dict = {}
    for name, profile in variants:
        root = Path(tempfile.mkdtemp(prefix=f"bench-workflow-{name}-"))
        try:
            project = build_project(root, runs)
            print(
                f"bench_workflow: scheduler comparison, {name} ({profile}), "
                f"{project['runs']:,} runs, {project['jobs']:,} jobs; load average {load()}",
                flush=True,
            )
            run = snakemake(root, name, ["--workflow-profile", profile])
            problems.append(failed(run))
            if run.jobs != project["jobs"]:
                problems.append(f"{name}: {run.jobs} jobs done, {project['jobs']} expected")
            problems += [f"{name}: {p}" for p in check_outputs(root, project)]
            results[name] = run
            print(f"  {name}: {run.wall_s:.1f} s", flush=True)
        finally:
            if keep:
                print(f"  kept: {root}")
            else:
                shutil.rmtree(root, ignore_errors=True)
    names = [name for name, _ in variants]
    title = f"Scheduler at {project.get('runs', runs):,} runs: " + " vs ".join(names)
    print(f"\n{title}\n" + "-" * len(title))
    table = {name: dict(execution_rows(results[name])) for name in names if name in results}
    keys = [key for key, _ in execution_rows(next(iter(results.values())))] if results else []
    width = max((len(k) for k in keys), default=0)
    column = max([len(v) for rows in table.values() for v in rows.values()] + [12])
    print("  " + " " * width + "".join(f"  {name:>{column}}" for name in table))
    for key in keys:
        print("  " + key.ljust(width) + "".join(f"  {table[n][key]:>{column}}" for n in table))
    if len(table) == 2:
        profile_s, ilp_s = results[names[0]].wall_s, results[names[1]].wall_s
        print(f"  ILP default / profile wall time: {ilp_s / profile_s:.1f}x")
    return [p for p in problems if p]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="matrix size (runs)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} runs (smoke test)")
    parser.add_argument(
        "--compare-ilp", action="store_true", help="also run the profile vs the ILP default"
    )
    parser.add_argument("--compare-runs", type=int, default=COMPARE_RUNS)
    parser.add_argument(
        "--only-compare", action="store_true", help="skip the main size, run the comparison only"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary projects")
    args = parser.parse_args(argv)
    runs = QUICK_RUNS if args.quick else args.runs
    if runs < 1 or args.compare_runs < 1:
        parser.error("--runs and --compare-runs must be at least 1")
    problems: list[str] = []
    if not args.only_compare:
        found, _ = bench_size(runs, args.keep)
        problems += found
    if args.compare_ilp or args.only_compare:
        problems += compare_schedulers(args.compare_runs, args.keep)
    for problem in problems:
        print(f"bench_workflow: FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
