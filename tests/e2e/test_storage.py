"""A full disk and a read-only results folder, on the real workflow: one sentence that says
who must act and how, exit 2 for a person, never a traceback."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.workflow import (
    ending_what_is_left,
    make_project,
    set_agent,
    snakemake,
    start_snakemake,
)
from tests.processes import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RUN = Path("results") / "demo" / "runs" / "nothing-off" / "r01"
AGENTAB = Path(sys.executable).parent / "agentab"


@contextlib.contextmanager
def mounted(*commands: list[str], at: Path) -> Iterator[Path]:
    at.mkdir(parents=True, exist_ok=True)
    try:
        for command in commands:
            subprocess.run(command, check=True)
        yield at
    finally:
        subprocess.run(["umount", "-l", str(at)], check=False)


def fill(folder: Path) -> None:
    with contextlib.suppress(OSError), open(folder / "filler", "wb") as filler:
        while True:
            filler.write(b"\0" * 65536)
            filler.flush()


def test_a_disk_that_fills_during_a_run_says_so_and_the_run_is_redone_once_freed(
    tmp_path: Path, pi_installation
) -> None:
    project = make_project(tmp_path / "full", pi_installation.root.parents[1], repetitions=1)
    set_agent(project, model="hang", timeout="6s")
    results = project / "results"
    tmpfs = ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(results)]
    output = tmp_path / "snakemake.out"
    with mounted(tmpfs, at=results), ending_what_is_left(project):
        process = start_snakemake(project, str(RUN / "run.json"), output=output)
        assert wait_until(lambda: (project / RUN / "agent.lock").exists(), 120), output.read_text()
        fill(results)  # the agent is running: its files have nowhere to go
        process.wait(timeout=120)
        text = output.read_text()
        assert process.returncode != 0
        assert "returned non-zero exit status 2" in text, text[-3000:]  # a person must act
        assert "agentab: results/demo: no space left on its disk (a person must act" in text
        assert "fix: free space on that disk" in text
        assert "Traceback" not in text and not (project / RUN / "run.json").exists()
        assert not (project / RUN / "faults.jsonl").exists(), "a full disk counted as a fault"
        # Still full: the next invocation says so before it starts anything.
        again = snakemake(project, str(RUN / "run.json"))
        assert again.returncode == 2, again.stdout + again.stderr
        assert "agentab: nothing runs.\nresults/demo: no space left on its disk" in again.stderr
        (results / "filler").unlink()
        set_agent(project, model="demo", timeout="2m")
        freed = snakemake(project, str(RUN / "run.json"))
        assert freed.returncode == 0, freed.stdout[-3000:] + freed.stderr[-3000:]
        assert (project / RUN / "run.json").exists()


def test_a_read_only_results_folder_stops_each_command_with_one_sentence(
    tmp_path: Path, pi_installation
) -> None:
    project = make_project(tmp_path / "ro", pi_installation.root.parents[1], repetitions=1)
    done = snakemake(project)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = project / "results"
    bind = ["mount", "--bind", str(results), str(results)]
    read_only = ["mount", "-o", "remount,ro,bind", str(results)]
    validator = project / "demo" / "validators" / "scope.py"
    validator.write_text(validator.read_text() + "# edited: its jobs are due again\n")
    with mounted(bind, read_only, at=results):
        workflow = snakemake(project)
        synthesize = run_agentab(project, "synthesize", "results/demo")
        report = run_agentab(project, "report", "results/demo")
    assert workflow.returncode == 2, workflow.stdout[-2000:] + workflow.stderr[-2000:]
    assert (
        "agentab: nothing runs.\nresults/demo: this folder cannot be written: read-only"
        in workflow.stderr
    )
    for command in (synthesize, report):
        assert command.returncode == 2, command.stdout + command.stderr
        assert "cannot be written: read-only, or no permission (a person must act)" in (
            command.stderr
        )
        assert "fix: make it writable" in command.stderr
    for command in (workflow, synthesize, report):
        assert "Traceback" not in command.stdout + command.stderr


def run_agentab(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(AGENTAB), *args], cwd=project, capture_output=True, text=True, timeout=120
    )
