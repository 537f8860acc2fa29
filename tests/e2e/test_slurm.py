"""The demo on a real one-node SLURM, through profiles/slurm, against a local run of it.

A module fixture starts munged, slurmctld and slurmd with tests/slurm/start.sh (installing
them with apt-get when they are missing; root only) and stops exactly those processes, by
the PIDs the script recorded, with tests/slurm/stop.sh. The demo runs once locally and once
on SLURM, one repetition per cell: the offline model is seeded per run, so every run must
end with the same status both ways.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.workflow import REPO, SNAKEMAKE, make_project, measures_files, set_agent

pytestmark = [pytest.mark.slurm, pytest.mark.e2e, pytest.mark.slow]

SLURM_SCRIPTS = REPO / "tests" / "slurm"
CELLS = ["nothing-off", "nothing-high", "rule-off", "rule-high"]


def run(argv: list[str], cwd: Path, seconds: int) -> subprocess.CompletedProcess:
    """A command under `timeout -k`: a hung Snakemake or a stuck status poll ends the test."""
    return subprocess.run(
        ["timeout", "-k", "10", str(seconds), *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """A one-node SLURM for this module; its daemons' PIDs, to check they are gone after."""
    if os.geteuid() != 0:
        pytest.skip("the one-node SLURM runs its daemons as root: run this test as root")
    state = tmp_path_factory.mktemp("slurm-state")
    try:
        started = run([str(SLURM_SCRIPTS / "start.sh"), str(state)], REPO, 300)
        assert started.returncode == 0, started.stderr
        pids = {p.name: int(p.read_text()) for p in (state / "pids").iterdir()}
        assert set(pids) == {"munged", "slurmctld", "slurmd"}
        yield pids
    finally:
        stopped = run([str(SLURM_SCRIPTS / "stop.sh"), str(state)], REPO, 120)
        assert stopped.returncode == 0, stopped.stderr
    assert not [name for name, pid in pids.items() if alive(pid)]


def statuses(project: Path) -> dict[str, str]:
    found = {}
    for path in measures_files(project):
        measures = json.loads(path.read_text())
        found[measures["run"]] = measures["status"]
    return found


def slurm_project(root: Path, harnesses_dir: Path) -> Path:
    """The demo with profiles/slurm as a user fills it in: an account (any name works
    without an accounting database) added to the default resources, nothing else changed."""
    project = make_project(root, harnesses_dir, repetitions=1)
    profile = project / "profiles" / "slurm" / "config.yaml"
    settings = yaml.safe_load(profile.read_text())
    settings["default-resources"].append("slurm_account=agentab-test")
    profile.write_text(yaml.safe_dump(settings, sort_keys=False))
    return project


def test_the_demo_on_slurm_ends_as_it_does_locally(slurm_cluster, pi_installation, tmp_path):
    harnesses = pi_installation.root.parents[1]
    local = make_project(tmp_path / "local", harnesses, repetitions=1)
    done = run([str(SNAKEMAKE), "--cores", "2"], local, 600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    cluster = slurm_project(tmp_path / "cluster", harnesses)
    # The first status check after 2 s instead of 40 (MinJobAge=300 is above 3 x 2 s).
    argv = [
        str(SNAKEMAKE),
        "--workflow-profile",
        "profiles/slurm",
        "--slurm-init-seconds-before-status-checks",
        "2",
    ]
    done = run(argv, cluster, 600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]

    # One SLURM job per run (its clone, agent run, validators and measures grouped), and the
    # aggregation where Snakemake runs.
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", output)
    assert len(submitted) == len(CELLS), output[-6000:]
    assert "localrule synthesize:" in output
    expected = {f"{cell}/r01" for cell in CELLS}
    assert set(statuses(local)) == expected
    assert statuses(cluster) == statuses(local)
    assert (cluster / "results" / "demo" / "synthesis.md").stat().st_size > 0
    queue = run(["squeue", "-h", "-o", "%i"], cluster, 30)
    assert queue.returncode == 0 and set(queue.stdout.split()).isdisjoint(submitted)


SLOW = """
[policy]
description = "Takes its time, then fixes mean."

[[steps]]
id = "wait"
action = "run"
command = "sleep 25; echo zq-slept"

[[steps]]
id = "fix"
action = "edit"
path = "calc.py"
old = "len(values) - 1"
new = "len(values)"

[final]
text = "Fixed."
"""


def running_jobs(cwd: Path) -> list[str]:
    queue = run(["squeue", "-h", "-o", "%i %T"], cwd, 30)
    return [line.split()[0] for line in queue.stdout.splitlines() if line.endswith("RUNNING")]


def test_a_cancelled_slurm_job_loses_nothing_and_is_redone(
    slurm_cluster, pi_installation, tmp_path
):
    """`scancel` of a job while its agent runs: no traceback, no lock or process left behind,
    and every run measured in the end (retried by this invocation, or redone by the next)."""
    project = slurm_project(tmp_path / "cancel", pi_installation.root.parents[1])
    (project / "demo" / "slow.toml").write_text(SLOW)
    set_agent(project, model="slow.toml", timeout="2m")
    argv = [
        str(SNAKEMAKE), "--workflow-profile", "profiles/slurm",
        "--slurm-init-seconds-before-status-checks", "2",
    ]  # fmt: skip
    log = tmp_path / "snakemake.log"
    with open(log, "w") as out:
        workflow = subprocess.Popen(
            ["timeout", "-k", "10", "600", *argv], cwd=project, stdout=out,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    runs = project / "results" / "demo" / "runs"
    deadline = time.monotonic() + 240
    cancelled = None
    while cancelled is None and time.monotonic() < deadline and workflow.poll() is None:
        locked = list(runs.glob("*/r01/agent.lock"))
        jobs = running_jobs(project)
        if locked and jobs:  # an agent is at work inside a running job
            cancelled = jobs[0]
            assert run(["scancel", cancelled], project, 30).returncode == 0
        time.sleep(0.5)
    assert cancelled is not None, log.read_text()[-4000:]
    # It ended by itself, not by `timeout` (124) or its kill (137, -9): every run measured (0),
    # or the cancelled one left to the next invocation (1).
    first = workflow.wait(timeout=600)
    assert first in (0, 1), (first, log.read_text()[-4000:])
    again = run(argv, project, 600)
    output = log.read_text() + again.stdout + again.stderr
    assert again.returncode == 0, output[-6000:]
    assert "Traceback" not in output, output[-6000:]
    assert set(statuses(project)) == {f"{cell}/r01" for cell in CELLS}
    assert not list(runs.glob("*/r01/agent.lock"))
    left = subprocess.run(["pgrep", "-f", "zq-slept"], capture_output=True, text=True)
    assert left.stdout == ""
    assert cancelled not in run(["squeue", "-h", "-o", "%i"], project, 30).stdout.split()
