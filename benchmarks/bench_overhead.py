"""Benchmark: agentab's own time per run, beside the agent's (docs/performance.md).

    python benchmarks/bench_overhead.py              # the demo, 3 repetitions: 12 runs
    python benchmarks/bench_overhead.py --quick      # 1 repetition: 4 runs (smoke test)
    python benchmarks/bench_overhead.py --repetitions 5 --keep

The demo scenario (the real pi against the offline model) is copied into a throwaway project
with the repository's Snakefile and rules. `snakemake -n -p` gives each job's own command, as
the workflow would run it; the benchmark runs the jobs of each run one after the other (agent
run, each validator, measures) and times them, each run twice:
- warm, as a local workflow runs it: the commands unchanged, each step handed over to a step
  server (agentab.workflow.step_server) started through `benchmarks/own_time.py --serve`;
- cold, as on a cluster node: each step in its own process, `python -m <step>` replaced by
  `python benchmarks/own_time.py <file> <step>`.
Either way own_time.py records how long the agent's or the validator's process (or a judge's
model calls) took. A job's own time is its wall time minus that; a run's own time is the sum
over its jobs. Snakemake's own per-job cost is not in it (see bench_scale.py). The step
server's start (once per invocation) is printed apart, and per run of the full demo.

Printed, each as a ratio against its reference measured in the same invocation:
- the median own time per run, warm and cold, and its share of the run's wall time (what a
  user waits for; with the offline model the agent's own time is a floor, so the share is the
  largest it gets: with a real model's run, `bench_local_model.py` measures it against 2%);
- a fresh clone of the etalon from its local mirror against a plain copy of the same tree
  (`shutil.copytree`, `cp -a`), target 1.5x.
The exit status is non-zero only when a job fails or leaves its output missing, never on a
timing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from own_time import WARM_OWN_FILE

from agentab.workflow.step_server import JUDGE_MODULE, StepServer

REPO = Path(__file__).resolve().parent.parent
OWN_TIME = Path(__file__).resolve().parent / "own_time.py"
DEMO = REPO / "scenarios" / "demo"
HARNESSES = REPO / ".agentab" / "harnesses"
CLONE_TARGET = 1.5
RUN_RULES = ("run_agent", "validate_run", "measure_run")
MODES = ("warm", "cold")
DEMO_RUNS = 40  # the demo as shipped: 4 cells x 10 repetitions
SETUP_RULES = ("install_harness", "freeze_scenario")
STEP_MODULE = re.compile(r" -m (agentab\.steps\.\w+) ")


@dataclass
class Job:
    rule: str
    wildcards: dict[str, str]
    command: str
    files: list[str] = field(default_factory=list)  # outputs and log: Snakemake makes their folders

    @property
    def run(self) -> tuple[str, str] | None:
        if "cell" not in self.wildcards:
            return None
        return self.wildcards["cell"], self.wildcards["rep"]

    @property
    def label(self) -> str:
        validator = self.wildcards.get("validator")
        return f"validate {validator}" if validator else self.rule.replace("_run", "")


@dataclass
class Timed:
    label: str
    wall_s: float
    own_waits_s: float

    @property
    def agentab_s(self) -> float:
        return self.wall_s - self.own_waits_s


@dataclass
class RunTimes:
    run: tuple[str, str]
    mode: str
    jobs: list[Timed] = field(default_factory=list)

    @property
    def agentab_s(self) -> float:
        return sum(job.agentab_s for job in self.jobs)


# ---------------------------------------------------------------------------- the project


def build_project(root: Path, repetitions: int) -> None:
    """A user project: the repository's workflow, the demo scenario, the installed harnesses."""
    shutil.copy2(REPO / "Snakefile", root / "Snakefile")
    for folder in ("rules", "config", "profiles", "envs", "scripts"):
        shutil.copytree(REPO / folder, root / folder)
    scenario_dir = root / "scenarios" / "demo"
    shutil.copytree(DEMO, scenario_dir)
    scenario = scenario_dir / "scenario.toml"
    text, count = re.subn(
        r"(?m)^repetitions = \d+", f"repetitions = {repetitions}", scenario.read_text()
    )
    if count != 1:
        raise SystemExit("bench_overhead: scenarios/demo/scenario.toml has no `repetitions = N`")
    scenario.write_text(text)
    (root / ".agentab").mkdir()
    if HARNESSES.exists():
        (root / ".agentab" / "harnesses").symlink_to(HARNESSES.resolve())


def compile_package() -> None:
    """Bytecode for every module, as an installed package has it: with PYTHONDONTWRITEBYTECODE
    set, an editable install would otherwise compile agentab's sources again in every job."""
    import compileall

    import agentab

    compileall.compile_dir(Path(agentab.__file__).parent, quiet=1)


def planned_jobs(root: Path) -> list[Job]:
    """Every job of the workflow with its shell command, from `snakemake -n -p`."""
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1", "--quiet=host"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"bench_overhead: snakemake -n failed:\n{result.stdout}{result.stderr}")
    jobs, rule, wildcards, files = [], None, {}, []
    for line in result.stdout.splitlines():
        stripped = line.strip()
        if match := re.match(r"^(?:local)?rule (\w+):$", stripped):
            rule, wildcards, files = match.group(1), {}, []
        elif stripped.startswith("wildcards:"):
            pairs = stripped.removeprefix("wildcards:").split(",")
            wildcards = dict(pair.strip().split("=", 1) for pair in pairs)
        elif stripped.startswith(("output:", "log:", "benchmark:")):
            files += [path.strip() for path in stripped.split(":", 1)[1].split(",")]
        elif line.startswith("Shell command: ") and rule:
            jobs.append(Job(rule, wildcards, line.removeprefix("Shell command: "), files))
            rule = None
    return jobs


def timed_command(command: str, own_file: Path) -> str:
    """The job's command with its step run through own_time.py."""
    replaced, count = STEP_MODULE.subn(
        lambda m: f" {OWN_TIME} {own_file} {m.group(1)} ", command, count=1
    )
    if count != 1:
        raise SystemExit(f"bench_overhead: no `-m agentab.steps.…` in {command}")
    return replaced


def shell(command: str, cwd: Path) -> tuple[float, int]:
    """Run a job's command as Snakemake does (bash, strict mode); its wall time and status."""
    start = time.perf_counter()
    status = subprocess.run(
        ["bash", "-c", f"set -euo pipefail; {command}"], cwd=cwd, stdin=subprocess.DEVNULL
    ).returncode
    return time.perf_counter() - start, status


def make_folders(job: Job, root: Path) -> None:
    for path in job.files:
        (root / path).parent.mkdir(parents=True, exist_ok=True)


def time_job(job: Job, root: Path, mode: str, problems: list[str]) -> Timed:
    own_file = root / WARM_OWN_FILE
    own_file.unlink(missing_ok=True)
    make_folders(job, root)
    command = job.command if mode == "warm" else timed_command(job.command, own_file)
    wall, status = shell(command, root)
    if status != 0:
        problems.append(f"{job.label} {'/'.join(job.run or ())} exited with {status}")
    waits = json.loads(own_file.read_text()) if own_file.exists() else []
    return Timed(job.label, wall, sum(wait["s"] for wait in waits))


def run_figures(root: Path, jobs: list[Job], problems: list[str]) -> list[RunTimes]:
    """Each run twice, warm then cold (interleaved, so that load weighs on both alike); the
    run's folder is emptied in between."""
    for job in jobs:
        if job.rule in SETUP_RULES:
            make_folders(job, root)
            _, status = shell(job.command, root)
            if status != 0:
                problems.append(f"{job.rule} exited with {status}")
    prepare_mirror(root)
    order = {rule: index for index, rule in enumerate(RUN_RULES)}
    by_run: dict[tuple[str, str], list[Job]] = {}
    for job in sorted(
        (job for job in jobs if job.rule in RUN_RULES and job.run),
        key=lambda job: (job.run, order[job.rule]),
    ):
        by_run.setdefault(job.run, []).append(job)
    figures = []
    for run, run_jobs in by_run.items():
        folder = root / "results" / "demo" / "runs" / run[0] / run[1]
        for mode in MODES:
            shutil.rmtree(folder, ignore_errors=True)
            times = RunTimes(run, mode, [time_job(job, root, mode, problems) for job in run_jobs])
            figures.append(times)
            if not (folder / "measures.json").exists():
                problems.append(f"{'/'.join(run)} ({mode}): no measures.json")
            print(".", end="", flush=True)
    print()
    return figures


def start_warm_server(root: Path) -> tuple[StepServer, float]:
    """The step servers a local workflow starts, timed; and how long until they all serve."""
    from agentab.workflow.targets import Workflow

    with contextlib.chdir(root):
        config = yaml.safe_load(Path("config/config.yaml").read_text())
        plan = Workflow.from_config(config)
        log = root / "step-server.log"
        start = time.perf_counter()
        server = StepServer.start(
            plan.warm_modules(),
            list(plan.scenario_paths.values()),
            log,
            [sys.executable, str(OWN_TIME), "--serve"],
        )
    servers = 2 if JUDGE_MODULE in plan.warm_modules() else 1  # the judge's is apart
    while log.read_text().count("serving as") < servers:
        if server.process.poll() is not None:
            raise SystemExit(f"bench_overhead: the step server ended:\n{log.read_text()}")
        time.sleep(0.005)
    return server, time.perf_counter() - start


def prepare_mirror(root: Path) -> None:
    """The etalon's mirror is made once per project, before the first run: not timed."""
    from agentab.etalon import ensure_mirror
    from agentab.scenario import load_scenario

    scenario = load_scenario(root / "scenarios" / "demo" / "scenario.toml")
    ensure_mirror(scenario.etalon.location, scenario.etalon.tag, root / ".agentab" / "mirrors")


# ---------------------------------------------------------------------------- references


def bare_start_up(repeats: int) -> float:
    """pi's bare start-up: `pi --version`, as the adapter would start it."""
    from agentab.harnesses import get_harness
    from agentab.scenario import load_scenario

    agent = load_scenario(DEMO / "scenario.toml", check_etalon=False).agent
    harness = get_harness(agent.harness)
    installation = harness.installation(agent.version, HARNESSES)
    argv = [*harness.command(installation), "--version"]
    env = harness.version_env(installation)
    return median_of(repeats, lambda: subprocess.run(argv, env=env, capture_output=True))


def python_start_up(repeats: int) -> float:
    """The floor of every job: starting the interpreter that runs the steps."""
    return median_of(repeats, lambda: subprocess.run([sys.executable, "-c", "pass"]))


def median_of(repeats: int, action) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def clone_against_copy(root: Path, repeats: int) -> dict[str, float]:
    """A fresh clone from the local mirror against plain copies of the tree the clone makes."""
    from agentab.etalon import fresh_clone
    from agentab.scenario import load_scenario

    etalon = load_scenario(root / "scenarios" / "demo" / "scenario.toml").etalon
    mirrors = root / ".agentab" / "mirrors"
    scratch = root / "clone-bench"
    made = scratch / "made"
    fresh_clone(etalon.location, etalon.tag, made, mirrors)
    times: dict[str, list[float]] = {"clone": [], "copytree": [], "cp -a": []}
    for index in range(repeats):
        # Interleaved, so that a burst of load on the machine weighs on all three alike.
        dest = scratch / f"clone-{index}"
        start = time.perf_counter()
        fresh_clone(etalon.location, etalon.tag, dest, mirrors)
        times["clone"].append(time.perf_counter() - start)
        dest = scratch / f"copytree-{index}"
        start = time.perf_counter()
        shutil.copytree(made, dest, symlinks=True)
        times["copytree"].append(time.perf_counter() - start)
        dest = scratch / f"cp-{index}"
        start = time.perf_counter()
        subprocess.run(["cp", "-a", str(made), str(dest)], check=True)
        times["cp -a"].append(time.perf_counter() - start)
    shutil.rmtree(scratch, ignore_errors=True)
    return {name: statistics.median(values) for name, values in times.items()}


# ---------------------------------------------------------------------------- reporting


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}\n" + "-" * len(title))
    for row in [header, *rows]:
        print("  " + "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))


def report_jobs(runs: list[RunTimes], mode: str) -> None:
    runs = [run for run in runs if run.mode == mode]
    labels = list(dict.fromkeys(job.label for run in runs for job in run.jobs))
    rows = []
    for label in labels:
        jobs = [job for run in runs for job in run.jobs if job.label == label]
        rows.append(
            [
                label,
                ms(statistics.median(job.wall_s for job in jobs)),
                ms(statistics.median(job.own_waits_s for job in jobs)),
                ms(statistics.median(job.agentab_s for job in jobs)),
            ]
        )
    print_table(
        f"Per job, {mode} ({MODE_SAYS[mode]}), median over {len(runs)} runs",
        ["job", "wall", "agent/validator's own", "agentab's own"],
        rows,
    )


MODE_SAYS = {
    "warm": "a local workflow: steps forked from the step server",
    "cold": "a cluster node: each step its own process",
}


def report_run(runs: list[RunTimes], start_up_s: float, python_s: float, ready_s: float) -> None:
    rows = []
    for mode in MODES:
        mine = [run for run in runs if run.mode == mode]
        own = [run.agentab_s for run in mine]
        per_run = statistics.median(own)
        wall = statistics.median(sum(job.wall_s for job in run.jobs) for run in mine)
        rows += [
            [f"{mode}: agentab's own time per run (median)", ms(per_run), "", ""],
            ["  a run's wall time (median)", ms(wall), f"{per_run / wall:.0%} agentab's", ""],
            ["  pi's bare start-up, for scale", ms(start_up_s), "", ""],
            ["  per run: min / max", f"{ms(min(own))} / {ms(max(own))}", "", ""],
        ]  # fmt: skip
    rows += [
        ["warm: the step servers' start, once per invocation", ms(ready_s), "", ""],
        [f"  per run of the demo as shipped ({DEMO_RUNS} runs)", ms(ready_s / DEMO_RUNS), "", ""],
        ["python start-up, the floor of a job", ms(python_s), "", ""],
    ]
    print_table("agentab's own time per run", ["figure", "time", "share", ""], rows)


def report_clone(times: dict[str, float]) -> None:
    copy = min(times["copytree"], times["cp -a"])
    rows = [
        ["fresh clone from the mirror", ms(times["clone"]), ""],
        ["shutil.copytree of the same tree", ms(times["copytree"]), ""],
        ["cp -a of the same tree", ms(times["cp -a"]), ""],
        [
            "clone / the faster copy",
            "",
            f"{times['clone'] / copy:.2f}x "
            f"({'met' if times['clone'] <= CLONE_TARGET * copy else 'NOT met'})",
        ],
    ]
    print_table(f"Clone against copy (target {CLONE_TARGET}x)", ["figure", "median", "ratio"], rows)


# ---------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repetitions", type=int, default=3, help="per cell of the demo's 4")
    parser.add_argument("--quick", action="store_true", help="1 repetition (4 runs)")
    parser.add_argument("--repeats", type=int, default=20, help="of each reference timing")
    parser.add_argument("--keep", action="store_true", help="keep the project")
    args = parser.parse_args(argv)
    repetitions = 1 if args.quick else args.repetitions
    if not (HARNESSES / "pi").exists():
        print("bench_overhead: pi is not installed in .agentab/harnesses; run the demo once")
        return 1
    root = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    problems: list[str] = []
    try:
        build_project(root, repetitions)
        compile_package()
        print(
            f"bench_overhead: the demo, {repetitions} repetition(s) per cell; "
            f"cores: {os.cpu_count()}; load average {load()}; project in {root}",
            flush=True,
        )
        jobs = planned_jobs(root)
        start_up = bare_start_up(args.repeats)
        python_s = python_start_up(args.repeats)
        server, ready_s = start_warm_server(root)
        try:
            runs = run_figures(root, jobs, problems)
        finally:
            server.stop()
        clone_times = clone_against_copy(root, args.repeats)
        if runs:
            for mode in MODES:
                report_jobs(runs, mode)
            report_run(runs, start_up, python_s, ready_s)
        report_clone(clone_times)
        print(f"\nload average at the end: {load()}")
    finally:
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    for problem in problems:
        print(f"bench_overhead: FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
