"""The workflow end to end: the real snakemake, the real pi binary, the offline model.

Each test is one promise of the workflow: the demo produces a measures.json per run and a
synthesis; a crash is redone alone; editing a validator, the metric contract or the synthesis
reruns only what depends on it; a killed Snakemake recovers with nothing lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from agentab.layout import SYNTHESIS_FILES
from tests.e2e.workflow import (
    REPO,
    SNAKEMAKE,
    job_counts,
    make_project,
    measures_files,
    processes_running,
    snakemake,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CELLS = ["nothing-off", "nothing-high", "rule-off", "rule-high"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory, pi_installation) -> Path:
    """The demo (2 repetitions) run once; tests that edit it work on their own copy."""
    project = make_project(tmp_path_factory.mktemp("finished"), pi_installation.root.parents[1])
    result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return project


def copy_of(project: Path, tmp_path: Path) -> Path:
    target = tmp_path / "project"
    subprocess.run(["cp", "-a", str(project), str(target)], check=True)
    return target


def dry_run(project: Path) -> dict[str, int]:
    result = snakemake(project, "-n")
    assert result.returncode == 0, result.stderr[-2000:]
    return job_counts(result.stdout + result.stderr)


def test_demo_writes_every_measures_and_the_synthesis(finished: Path) -> None:
    files = measures_files(finished)
    assert [f.parent.parent.name for f in files] == sorted(c for c in CELLS for _ in range(2))
    for path in files:
        measures = json.loads(path.read_text())
        assert measures["status"] in ("valid", "invalid", "failed"), measures
        assert measures["provenance"]["harness_version"] == "1.6.0"
    results = finished / "results" / "demo"
    for name in SYNTHESIS_FILES:
        assert (results / name).stat().st_size > 0, name
    assert (results / "scenario.toml").read_bytes() == (
        finished / "demo" / "scenario.toml"
    ).read_bytes()
    assert (results / "forms" / "review.blank.toml").exists()
    # no tooling file reached the agent's patch
    patches = sorted((results / "runs").glob("*/r*/result.patch"))
    assert len(patches) == 8
    for patch in patches:
        assert b".snakemake_timestamp" not in patch.read_bytes()


def test_up_to_date_means_nothing_to_do(finished: Path) -> None:
    assert dry_run(finished) == {}


def test_editing_a_validator_reruns_its_jobs_never_an_agent_run(
    finished: Path, tmp_path: Path
) -> None:
    project = copy_of(finished, tmp_path)
    runs_before = {p: p.stat().st_mtime_ns for p in (project / "results").rglob("run.json")}
    assert len(runs_before) == 8
    script = project / "demo" / "validators" / "scope.py"
    script.write_text(script.read_text() + "\n# stricter wording\n")
    planned = dry_run(project)
    assert planned == {
        "validate_run": 8,
        "measure_run": 8,
        "synthesize": 1,
        "form_blank": 2,  # review, and people (the judge checked against people)
        "report": 1,
    }
    result = snakemake(project)
    assert result.returncode == 0, result.stderr[-3000:]
    assert job_counts(result.stderr + result.stdout) == planned
    assert {p: p.stat().st_mtime_ns for p in (project / "results").rglob("run.json")} == runs_before


def test_a_metric_already_returned_becomes_scored_without_remeasuring(
    finished: Path, tmp_path: Path
) -> None:
    project = copy_of(finished, tmp_path)
    before = statuses(project)
    valid = [run for run, status in before.items() if status == "valid"]
    assert len(before) == 8 and valid, before  # the demo measured, and some runs are valid
    assert all("tool_calls" in measures_of(project, run)["extra"] for run in valid)  # not scored
    scenario = project / "demo" / "scenario.toml"
    scenario.write_text(
        scenario.read_text().replace(
            '"on_task", "readable"]', '"on_task", "readable", "tool_calls"]'
        )
    )
    planned = dry_run(project)
    assert set(planned) <= {"measure_run", "synthesize", "form_blank", "freeze_scenario", "report"}
    assert planned["measure_run"] == 8
    result = snakemake(project)
    assert result.returncode == 0, result.stderr[-3000:]
    assert statuses(project) == before
    for run in valid:
        measures = measures_of(project, run)
        assert isinstance(measures["metrics"]["tool_calls"], int)
        assert "tool_calls" not in measures["extra"]


def statuses(project: Path) -> dict[str, str]:
    """Each run's status: `<cell>/r<NN>` -> valid, invalid or failed."""
    return {
        str(path.parent.relative_to(path.parents[2])): json.loads(path.read_text())["status"]
        for path in measures_files(project)
    }


def measures_of(project: Path, run: str) -> dict:
    return json.loads((project / "results" / "demo" / "runs" / run / "measures.json").read_text())


def test_editing_the_synthesis_template_reruns_only_the_synthesis(
    finished: Path, tmp_path: Path
) -> None:
    project = copy_of(finished, tmp_path)
    template = REPO / "src" / "agentab" / "templates" / "synthesis.md.j2"
    original = template.read_bytes()
    stat = template.stat()
    # Snakemake compares a checksum, not only the mtime: the edit must change the content.
    try:
        template.write_bytes(original + b"{# an edit #}\n")
        assert dry_run(project) == {"synthesize": 1, "report": 1}
    finally:
        template.write_bytes(original)
        os.utime(template, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_an_agent_crash_fails_its_job_alone_and_is_redone_alone(
    tmp_path: Path, pi_installation
) -> None:
    project = make_project(tmp_path / "crash", pi_installation.root.parents[1], repetitions=2)
    # The extension crashes pi while a marker lies in the harness's install (the one folder of
    # the machine a sandboxed agent sees that the test can change without changing an input).
    marker = pi_installation.root / f"crash-{uuid.uuid4().hex[:8]}"
    extension = project / "demo" / "bricks" / "crash-once.ts"
    extension.write_text(
        'import { existsSync } from "node:fs";\n'
        "export default function () {\n"
        f'  if (existsSync("/opt/harness/{marker.name}")) process.exit(3);  // a harness bug\n'
        "}\n"
    )
    marker.write_text("crash\n")
    scenario = project / "demo" / "scenario.toml"
    scenario.write_text(
        scenario.read_text()
        + '\n[deltas.harness.crashy]\nextensions = ["bricks/crash-once.ts"]\n'
        + '\n[variants.crashy]\nharness = "crashy"\n'
    )
    try:
        first = snakemake(project)  # the default profile keeps going
    finally:
        marker.unlink()
    assert first.returncode != 0
    assert len(measures_files(project)) == 8  # 5 cells × 2, less the crashed variant's two
    assert "demo: 8/10 runs measured" in first.stdout + first.stderr
    assert "redo only what is missing" in first.stdout + first.stderr
    assert dry_run(project).get("run_agent") == 2
    second = snakemake(project)
    assert second.returncode == 0, second.stderr[-3000:]
    assert job_counts(second.stderr + second.stdout)["run_agent"] == 2
    assert len(measures_files(project)) == 10


def test_kill_9_of_snakemake_then_rerun_incomplete_loses_nothing(
    tmp_path: Path, pi_installation
) -> None:
    project = make_project(tmp_path / "killed", pi_installation.root.parents[1], repetitions=2)
    process = subprocess.Popen(
        [str(SNAKEMAKE), "--cores", "2"],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert wait_for_agent(project, seconds=120), "no agent run started"
        process.send_signal(signal.SIGKILL)  # Snakemake only: its agent runs are left running
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert snakemake(project, "--unlock").returncode == 0  # what a person does after a kill -9
    result = snakemake(project, "--rerun-incomplete")
    assert result.returncode == 0, result.stderr[-3000:]
    files = measures_files(project)
    assert len(files) == 8
    assert all(json.loads(f.read_text())["status"] in ("valid", "invalid") for f in files)
    assert not agent_processes(project)


def agent_processes(project: Path) -> list[int]:
    return processes_running(project, b"pi-coding-agent")


def wait_for_agent(project: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if agent_processes(project):
            return True
        time.sleep(0.02)
    return False


def test_form_round_trip_updates_only_measures_and_synthesis(
    finished: Path, tmp_path: Path
) -> None:
    project = copy_of(finished, tmp_path)
    forms = project / "results" / "demo" / "forms"
    blank = (forms / "review.blank.toml").read_text()
    assert "nothing · off" not in blank and "rule-off" not in blank and "runs/" not in blank
    # a person fills the first three runs and leaves the rest pending
    filled, answered = [], 0
    for line in blank.splitlines():
        if line.startswith("# readable =") and answered < 3:
            line = f"readable = {'true' if answered % 2 == 0 else 'false'}"
            answered += 1
        filled.append(line)
    (forms / "review.toml").write_text("\n".join(filled) + "\n")
    planned = dry_run(project)
    assert planned == {
        "ingest_form": 1,
        "measure_run": 8,
        "synthesize": 1,
        "form_blank": 2,  # review, and people (the judge checked against people)
        "report": 1,
    }
    result = snakemake(project)
    assert result.returncode == 0, result.stderr[-3000:]
    measures = [json.loads(p.read_text()) for p in measures_files(project)]
    with_answer = [m for m in measures if "readable" in m["metrics"]]
    assert len(with_answer) == 3
    assert sum("readable" in m["pending"] for m in measures if m["status"] == "valid") == 5
    synthesis = (project / "results" / "demo" / "synthesis.md").read_text()
    assert "readable" in synthesis and "pending" in synthesis
    assert (forms / "review.toml").read_text() == "\n".join(filled) + "\n"  # never overwritten


def test_an_invalid_scenario_stops_snakemake_with_its_problems(tmp_path: Path) -> None:
    project = make_project(tmp_path / "invalid", tmp_path / "no-harnesses", repetitions=2)
    scenario = project / "demo" / "scenario.toml"
    scenario.write_text(scenario.read_text().replace("repetitions = 2", "repetition = 2"))
    result = snakemake(project, "-n")
    assert result.returncode != 0
    assert "agentab: nothing runs." in result.stderr
    assert "protocol.repetition" in result.stderr and "did you mean `repetitions`" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (project / "results").exists()


def test_the_workflow_installs_the_pinned_harness_itself(tmp_path: Path) -> None:
    harnesses = tmp_path / "harnesses"
    project = make_project(tmp_path / "fresh", harnesses, repetitions=1)
    marker = harnesses / "pi" / "1.6.0" / "installed.json"
    result = snakemake(project, str(marker))
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(marker.read_text())["version"] == "1.6.0"
    assert dry_run(project).get("install_harness") is None  # installed once, then up to date


def test_a_deleted_or_broken_per_run_file_is_redone_with_what_depends_on_it(
    finished: Path, tmp_path: Path
) -> None:
    project = copy_of(finished, tmp_path)
    runs = project / "results" / "demo" / "runs"
    (runs / "rule-off" / "r01" / "measures.json").unlink()
    (runs / "rule-off" / "r02" / "measures.json").write_text('{"status": "val')  # truncated
    (runs / "nothing-off" / "r01" / "validators" / "tests.json").write_text("garbage")
    record = runs / "nothing-high" / "r02" / "run.json"
    record.write_text("{}")
    dry = snakemake(project, "-n")
    assert "would remove" in dry.stderr and record.read_text() == "{}"
    result = snakemake(project)
    assert result.returncode == 0, result.stderr[-3000:]
    counts = job_counts(result.stdout + result.stderr)
    assert counts.get("run_agent") == 1  # only the run whose record was broken
    assert counts.get("validate_run") == 4 + 1  # that run's four, and the broken output
    assert counts.get("measure_run") == 4
    assert counts.get("synthesize") == 1
    assert len(measures_files(project)) == 8
    synthesis = (project / "results" / "demo" / "synthesis.md").read_text()
    assert "missing" not in synthesis.lower() or "0 missing" in synthesis.lower()
    assert job_counts(snakemake(project, "-n").stdout) == {}
