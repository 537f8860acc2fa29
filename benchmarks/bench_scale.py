"""Benchmark: planning the real workflow at scale, against a trivial Snakefile with the same jobs.

    python benchmarks/bench_scale.py                # 10 000 runs (many minutes on 2 cores)
    python benchmarks/bench_scale.py --quick        # 200 runs (smoke test)
    python benchmarks/bench_scale.py --runs 2000 --keep

Two projects in temporary folders: the real workflow (the repository's Snakefile, rules, config
and profiles, a scenario made from the demo with the asked number of runs, as
bench_workflow.py builds it), and a trivial Snakefile with the same job graph: the same rules,
one job per job of the real workflow, the same dependency edges, plain wildcards, `touch`
commands, and no agentab code at parse time. Both use the same profile (its scheduler
settings). Timed, in turns, as ratios real / trivial (target 1.3x):

- `snakemake -n` with nothing built (the DAG of every job);
- `snakemake -n` once every output exists (the up-to-date check): the outputs are made by the
  benchmark, each stage a second newer than the one before, not by running the jobs.

The exit status is non-zero only when a dry run fails or finds work where there is none, never
on a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_workflow import SCENARIO_NAME, build_project, load  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_RUNS = 10_000
QUICK_RUNS = 200
TARGET_RATIO = 1.3
# The stages of the job graph, oldest outputs first: each stage's inputs are older than it.
STAGES = (
    ("install_harness", "freeze_scenario"),
    ("run_agent",),
    ("validate_run",),
    ("measure_run",),
    ("synthesize", "form_blank"),
    ("report",),
)

TRIVIAL_SNAKEFILE = """\
# The job graph of the real workflow with nothing of agentab in it: same rules, same jobs,
# same edges, plain wildcards, touch commands.
CELLS = {cells!r}
REPS = {reps!r}
VALIDATORS = {validators!r}
FORMS = {forms!r}
S = "bench"
RUN = "results/{{scenario}}/runs/{{cell}}/{{rep}}"
RUN_FILES = ["run.json", "stream.jsonl", "transcript.jsonl", "result.patch",
             "model-requests.jsonl", "receipt.json"]
SYNTHESIS = {synthesis!r}
MEASURES = expand("results/" + S + "/runs/{{cell}}/{{rep}}/measures.json", cell=CELLS, rep=REPS)

wildcard_constraints:
    scenario=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    cell=r"[a-z0-9]+(-[a-z0-9]+)*",
    rep=r"r[0-9][0-9]+",
    validator=r"[^/]+",

rule all:
    input:
        expand("results/{{scenario}}/{{name}}", scenario=S, name=SYNTHESIS),
        "results/" + S + "/report/index.html",
        expand("results/{{scenario}}/forms/{{form}}.blank.toml", scenario=S, form=FORMS),

rule install_harness:
    output: ".agentab/harnesses/{{harness}}/{{version}}/installed.json"
    shell: "touch {{output}}"

rule freeze_scenario:
    output: "results/{{scenario}}/scenario.toml"
    priority: 100
    shell: "touch {{output}}"

rule run_agent:
    input: ancient(".agentab/harnesses/pi/1.6.0/installed.json")
    output: [RUN + "/" + name for name in RUN_FILES]
    resources: agent_slots=1
    shell: "touch {{output}}"

rule validate_run:
    input: RUN + "/run.json", RUN + "/transcript.jsonl", RUN + "/result.patch"
    output: RUN + "/validators/{{validator}}.json"
    shell: "touch {{output}}"

rule measure_run:
    input:
        RUN + "/run.json",
        expand(RUN + "/validators/{{validator}}.json", validator=VALIDATORS, allow_missing=True),
    output: RUN + "/measures.json"
    shell: "touch {{output}}"

rule synthesize:
    input: "results/{{scenario}}/scenario.toml", MEASURES
    output: ["results/{{scenario}}/" + name for name in SYNTHESIS]
    shell: "touch {{output}}"

rule form_blank:
    input: MEASURES
    output: "results/{{scenario}}/forms/{{validator}}.blank.toml"
    shell: "touch {{output}}"

rule report:
    input: ["results/{{scenario}}/" + name for name in SYNTHESIS], MEASURES
    output: "results/{{scenario}}/report/index.html"
    shell: "touch {{output}}"
"""


def trivial_project(root: Path, real: Path) -> None:
    """The trivial Snakefile, with the real project's cells, repetitions and validators."""
    from agentab.layout import SYNTHESIS_FILES
    from agentab.scenario import load_scenario

    scenario = load_scenario(real / "scenarios" / "bench" / "scenario.toml", check_etalon=False)
    text = TRIVIAL_SNAKEFILE.format(
        cells=[cell.slug for cell in scenario.cells],
        reps=[f"r{rep:02d}" for rep in range(1, scenario.repetitions + 1)],
        validators=[n for n, s in scenario.validators.items() if s.mode != "form"],
        forms=[n for n, s in scenario.validators.items() if s.mode == "form"],
        synthesis=list(SYNTHESIS_FILES),
    )
    (root / "Snakefile").write_text(text, encoding="utf-8")
    shutil.copytree(real / "profiles", root / "profiles")


def dry_run(root: Path) -> tuple[float, str, int]:
    command = [sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "2", "--quiet=host"]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=root, capture_output=True, text=True)
    return time.perf_counter() - start, result.stdout + result.stderr, result.returncode


def planned_outputs(output: str) -> dict[str, list[str]]:
    """Each rule's outputs, from a dry run's job listing."""
    outputs: dict[str, list[str]] = {}
    rule = None
    for line in output.splitlines():
        stripped = line.strip()
        if match := re.match(r"^(?:local)?rule (\w+):$", stripped):
            rule = match.group(1)
        elif stripped.startswith("output:") and rule:
            paths = [path.strip() for path in stripped.removeprefix("output:").split(",")]
            outputs.setdefault(rule, []).extend(paths)
    return outputs


def make_outputs(root: Path, outputs: dict[str, list[str]]) -> int:
    """Every output, newer than every source, each stage a second newer than the one before."""
    made = 0
    base = time.time()
    for index, rules in enumerate(STAGES):
        stamp = base + index
        for rule in rules:
            for path in outputs.get(rule, []):
                target = root / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch()
                os.utime(target, (stamp, stamp))
                made += 1
    return made


def fill_per_run_files(root: Path) -> int:
    """The per-run files of the real project, made well-formed as real runs leave them (the
    repair at start reads them), each keeping its time. Returns how many were filled."""
    from agentab.scenario import load_scenario

    scenario_file = root / "scenarios" / SCENARIO_NAME / "scenario.toml"
    names = {cell.slug: cell.name for cell in load_scenario(scenario_file).cells}
    filled = 0
    for run in (root / "results").glob("*/runs/*/r*"):
        contents = {
            "run.json": {"outcome": {"status": "completed"}},
            "measures.json": {
                "cell": names[run.parent.name],
                "rep": int(run.name[1:]),
                "status": "valid",
                "metrics": {},
            },
        }
        files = [run / "run.json", run / "measures.json", *(run / "validators").glob("*.json")]
        for path in files:
            if path.is_file() and not path.name.endswith(".audit.json"):
                stamp = path.stat().st_mtime
                path.write_text(json.dumps(contents.get(path.name, {"ok": True})))
                os.utime(path, (stamp, stamp))
                filled += 1
    return filled


def job_count(output: str) -> int | None:
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "total" and parts[1].isdigit():
            return int(parts[1])
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} runs")
    parser.add_argument("--repeats", type=int, default=3, help="timings of each, in turns")
    parser.add_argument("--keep", action="store_true", help="keep the projects")
    args = parser.parse_args(argv)
    runs = QUICK_RUNS if args.quick else args.runs
    problems: list[str] = []
    real = Path(tempfile.mkdtemp(prefix="bench-scale-real-"))
    trivial = Path(tempfile.mkdtemp(prefix="bench-scale-trivial-"))
    try:
        project = build_project(real, runs)
        trivial_project(trivial, real)
        print(
            f"bench_scale: {project['runs']:,} runs, {project['jobs']:,} jobs; cores "
            f"{os.cpu_count()}; load average {load()}; projects in {real} and {trivial}",
            flush=True,
        )
        times: dict[str, dict[str, list[float]]] = {
            "dry run, nothing built": {"real": [], "trivial": []},
            "up-to-date check": {"real": [], "trivial": []},
        }
        listings = {}
        for _ in range(max(1, args.repeats)):
            for name, root in (("real", real), ("trivial", trivial)):
                seconds, output, status = dry_run(root)
                jobs = job_count(output)
                if status != 0 or jobs != project["jobs"]:
                    problems.append(f"{name}: dry run exited {status}, {jobs} jobs planned")
                times["dry run, nothing built"][name].append(seconds)
                listings[name] = output
                print(f"  {name}: dry run {seconds:.1f} s, {jobs} jobs", flush=True)
        for name, root in (("real", real), ("trivial", trivial)):
            make_outputs(root, planned_outputs(listings[name]))
        fill_per_run_files(real)
        for _ in range(max(1, args.repeats)):
            for name, root in (("real", real), ("trivial", trivial)):
                seconds, output, status = dry_run(root)
                if status != 0 or "Nothing to be done" not in output:
                    problems.append(f"{name}: the up-to-date check found work or failed")
                times["up-to-date check"][name].append(seconds)
                print(f"  {name}: up-to-date check {seconds:.1f} s", flush=True)
        title = f"At {project['runs']:,} runs ({project['jobs']:,} jobs): real / trivial"
        print(f"\n{title}\n" + "-" * len(title))
        for figure, by_name in times.items():
            real_s = statistics.median(by_name["real"])
            trivial_s = statistics.median(by_name["trivial"])
            ratio = real_s / trivial_s
            verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
            print(
                f"  {figure}: real {real_s:.1f} s, trivial {trivial_s:.1f} s, "
                f"ratio {ratio:.2f}x (target {TARGET_RATIO}x: {verdict})"
            )
        print(f"  load average at the end: {load()}")
    finally:
        for root in (real, trivial):
            if args.keep:
                print(f"kept: {root}")
            else:
                shutil.rmtree(root, ignore_errors=True)
    for problem in problems:
        print(f"bench_scale: FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
