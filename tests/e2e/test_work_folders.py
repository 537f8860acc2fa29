"""A run step killed between its clone and its lock leaves no clone: its work folder names its
owner (`run/workspace.py`), and the workflow's next start removes it, unmounting what was
mounted there. Killed at that moment for real: the step is frozen (SIGSTOP) as soon as its clone
appears, checked to hold no lock yet, then killed (SIGKILL), as a lost node or an OOM kill
would."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.workflow import ending_what_is_left, make_project, snakemake, start_snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPETITIONS = 3  # a try per run, one run at a time, until one is caught before its lock


def one_cell(project: Path) -> None:
    """The demo with its baseline cell alone: the runs go one after the other."""
    scenario = project / "demo" / "scenario.toml"
    text = re.sub(r"(?s)\n\[axes\].*?\n\[validation\]", "\n[validation]", scenario.read_text())
    scenario.write_text(text)


def mounted_under(folder: Path) -> list[str]:
    points = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    return [point for point in points if point.startswith(str(folder))]


def catch_a_step_between_clone_and_lock(project: Path, deadline: float) -> Path | None:
    """The work folder of a run step frozen after its clone appeared and before its lock did,
    then killed; None when every try found the lock already taken."""
    work, runs = project / ".agentab" / "work", project / "results" / "demo" / "runs"
    tried: set[Path] = set()
    while time.monotonic() < deadline:
        for clone in work.glob("*/space/calc"):
            folder = clone.parents[1]
            if folder in tried or not (folder / "owner.json").exists():
                continue
            tried.add(folder)
            owner = json.loads((folder / "owner.json").read_text())["pid"]
            os.kill(owner, signal.SIGSTOP)
            if not list(runs.glob("*/r*/agent.lock")):
                os.kill(owner, signal.SIGKILL)
                return folder
            os.kill(owner, signal.SIGCONT)  # too late: its lock is taken; the next run
            if len(tried) == REPETITIONS:
                return None
        time.sleep(0.002)
    return None


@contextlib.contextmanager
def unmounting_what_is_left(folder: Path):
    """A test that failed may leave a run's space mounted: unmounted when the block ends."""
    try:
        yield
    finally:
        for point in reversed(mounted_under(folder)):
            subprocess.run(["umount", "-l", point], check=False, capture_output=True)


def test_a_step_killed_between_its_clone_and_its_lock_leaves_nothing(tmp_path, pi_installation):
    project = make_project(
        tmp_path / "project", pi_installation.root.parents[1], repetitions=REPETITIONS
    )
    one_cell(project)
    with unmounting_what_is_left(project):
        killed_then_started_again(project, tmp_path)


def killed_then_started_again(project: Path, tmp_path: Path) -> None:
    with ending_what_is_left(project):
        workflow = start_snakemake(project, "--cores", "1", output=tmp_path / "first.log")
        folder = catch_a_step_between_clone_and_lock(project, time.monotonic() + 240)
        assert folder is not None, (tmp_path / "first.log").read_text()[-3000:]
        with contextlib.suppress(Exception):
            workflow.wait(timeout=300)
    # What the kill left: the clone (whole, or cut off while git was still writing it: the step
    # is caught as soon as the clone's folder appears), and (as root) the run's space mounted.
    assert (folder / "space" / "calc").is_dir()
    if os.getuid() == 0:  # root mounts the run's capped space: the kill left it mounted
        assert mounted_under(folder) == [str(folder / "space")]
    second = snakemake(project)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert not folder.exists()
    assert list((project / ".agentab" / "work").iterdir()) == []  # nothing, not even a run's
    assert mounted_under(project / ".agentab" / "work") == []
    measures = sorted((project / "results" / "demo" / "runs").glob("*/r*/measures.json"))
    assert len(measures) == REPETITIONS  # the killed run was redone
