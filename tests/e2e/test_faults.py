"""Faults the workflow survives: a stop signal, a kill -9 in the middle of a job.

Each test starts the real snakemake on a small copy of the demo, interrupts it at a chosen
moment (an agent or a validator that waits, so that the moment is certain), and checks what
the interruption left and what the next invocation does with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agentab.run.process import group_alive
from agentab.workflow.step_client import parent_of
from tests.e2e.test_recording_proxy import project_on_provider
from tests.e2e.workflow import (
    command_line,
    ending_what_is_left,
    job_counts,
    make_project,
    processes_in,
    processes_running,
    set_agent,
    snakemake,
    start_snakemake,
)
from tests.processes import is_running, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RUNS = Path("results") / "demo" / "runs"
AGENT_TIMEOUT = "10m"  # far beyond the test: only a stop can end these agents in time
PROMPT_STOP_S = 20
# One run, one validator as targets, so that a test is short.
SLOW = RUNS / "nothing-off" / "r01" / "validators" / "slow.json"


@pytest.mark.parametrize(
    ("signum", "whole_group"),
    [
        (signal.SIGTERM, False),  # `kill PID`, as a batch system or a service manager sends it
        (signal.SIGINT, True),  # Ctrl-C: the terminal signals the foreground process group
        (signal.SIGHUP, False),  # the terminal closed
    ],
    ids=["sigterm", "ctrl-c", "sighup"],
)
def test_a_stop_signal_ends_the_agents_in_flight_and_leaves_their_runs_to_redo(
    tmp_path: Path, pi_installation, signum: int, whole_group: bool
) -> None:
    project = make_project(tmp_path / "stopped", pi_installation.root.parents[1], repetitions=1)
    set_agent(project, model="hang", timeout=AGENT_TIMEOUT)
    output = tmp_path / "snakemake.out"
    with ending_what_is_left(project):
        process = start_snakemake(project, output=output)
        # Two agents at once (--cores 2): each run step writes its lock once its agent runs.
        assert wait_until(lambda: len(agent_locks(project)) == 2, 120), output.read_text()
        stopped_runs = sorted(run_of(lock) for lock in agent_locks(project))
        agent_groups = [json.loads(lock.read_text())["pgid"] for lock in agent_locks(project)]
        assert len(stopped_runs) == len(agent_groups) == 2, stopped_runs
        os.killpg(process.pid, signum) if whole_group else process.send_signal(signum)
        process.wait(timeout=PROMPT_STOP_S)  # the agents' timeout is 10 minutes
        assert not processes_in(project), "a process of the project outlived snakemake"
        assert not any(group_alive(pgid) for pgid in agent_groups)
    text = output.read_text()
    assert process.returncode != 0
    name = signal.Signals(signum).name
    for run in stopped_runs:
        assert f"agentab: stopped by {name}; the agent of run {run} was ended" in text, text
        kept = project / RUNS / run / "earlier-attempts" / "attempt-1-model-requests.jsonl"
        assert kept.exists(), "the stopped attempt's request log was not kept apart"
    assert not list((project / RUNS).glob("*/r*/run.json"))
    assert not list((project / RUNS).glob("*/r*/measures.json"))
    assert not agent_locks(project)
    assert not list((project / ".agentab" / "work").iterdir()), "a clone was left behind"
    assert "Traceback" not in text
    assert job_counts(snakemake(project, "-n").stdout).get("run_agent") == 4


def test_a_stop_signal_during_a_validator_ends_it_and_leaves_no_output(
    tmp_path: Path, pi_installation
) -> None:
    project = make_project(tmp_path / "stopped", pi_installation.root.parents[1], repetitions=1)
    add_sleeping_validator(project)
    run = project / RUNS / "nothing-off" / "r01"
    output = tmp_path / "snakemake.out"
    with ending_what_is_left(project):
        process = start_snakemake(project, str(SLOW), output=output)
        assert wait_until(lambda: sleeping_validator(project), 120), output.read_text()
        validator = sleeping_validator(project)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=PROMPT_STOP_S)  # the validator sleeps 10 minutes
        assert not is_running(validator)
        assert not processes_in(project), "a process of the project outlived snakemake"
    text = output.read_text()
    assert process.returncode != 0
    assert (
        "agentab: stopped by SIGTERM; the validator slow of run nothing-off/r01 was ended" in text
    ), text
    assert not (run / "validators" / "slow.json").exists()
    assert not (run / "validators" / ".slow.lock").exists()
    assert not list((project / ".agentab" / "work").iterdir()), "a scratch folder was left"
    assert "Traceback" not in text


def test_kill_9_during_a_validator_then_the_first_recovery_succeeds(
    tmp_path: Path, pi_installation
) -> None:
    project = make_project(tmp_path / "killed", pi_installation.root.parents[1], repetitions=1)
    wake = add_sleeping_validator(project)
    output = tmp_path / "snakemake.out"
    with ending_what_is_left(project):
        process = start_snakemake(project, str(SLOW), output=output)
        assert wait_until(lambda: sleeping_validator(project), 120), output.read_text()
        validator = sleeping_validator(project)
        step = ancestor_running(validator, b"agentab.steps.validate")
        # Snakemake and the validate step die at once; the validator's sandbox dies with its
        # step (bwrap --die-with-parent): no stale validator is left asleep.
        process.kill()
        os.kill(step, signal.SIGKILL)
        process.wait(timeout=30)
        assert wait_until(lambda: not is_running(validator), 10), "the validator outlived its step"
        assert snakemake(project, "--unlock").returncode == 0
        wake.touch()  # from now on the validator scores at once
        again = snakemake(project, str(SLOW))  # the default profile reruns incomplete jobs
    text = again.stdout + again.stderr
    assert again.returncode == 0, text[-3000:]
    assert "Traceback" not in text
    run = project / RUNS / "nothing-off" / "r01"
    output_of_slow = json.loads((run / "validators" / "slow.json").read_text())
    assert output_of_slow["ok"] and output_of_slow["metrics"] == {"slept": True}, output_of_slow
    assert not list((run / "validators").glob(".*.lock"))
    assert not list((project / ".agentab" / "work").iterdir()), "a scratch folder was left"


def test_kill_9_during_an_agent_run_then_one_attempt_one_request_log(
    tmp_path: Path, pi_installation
) -> None:
    project = make_project(tmp_path / "killed", pi_installation.root.parents[1], repetitions=1)
    policy = project / "demo" / "sleeps-once.toml"
    policy.write_text(SLEEPS_ONCE)
    set_agent(project, model="sleeps-once.toml", timeout=AGENT_TIMEOUT)
    run = project / RUNS / "nothing-off" / "r01"
    target = str(RUNS / "nothing-off" / "r01" / "run.json")
    output = tmp_path / "snakemake.out"
    with ending_what_is_left(project):
        process = start_snakemake(project, target, output=output)
        assert wait_until(lambda: processes_running(project, b"sleep 600"), 120), output.read_text()
        process.kill()  # Snakemake only: its run step and agent are left running
        process.wait(timeout=30)
        assert snakemake(project, "--unlock").returncode == 0
        # The sandboxed agent keeps no state across attempts: the policy itself stops sleeping.
        policy.write_text(SLEEPS_ONCE.replace("sleep 600", "true"))
        again = snakemake(project, target)
    text = again.stdout + again.stderr
    assert again.returncode == 0, text[-3000:]
    assert "Traceback" not in text
    redone = request_numbers(run / "model-requests.jsonl")
    assert redone == list(range(1, len(redone) + 1)) and len(redone) >= 3, redone
    kept = list((run / "earlier-attempts").iterdir())
    assert [path.name for path in kept] == ["attempt-1-model-requests.jsonl"]
    assert request_numbers(kept[0]) == [1, 2]  # read calc.py; then the command that sleeps
    assert "sleep 600" in kept[0].read_text()


# The agent reads calc.py, then runs a command that sleeps (the test takes the sleep out of the
# policy before the rerun), so that a kill finds the agent in the middle of its run with two
# requests made.
SLEEPS_ONCE = """
[policy]
description = "Reads calc.py, then runs a command that sleeps."

[[steps]]
id = "read"
action = "read"
path = "calc.py"

[[steps]]
id = "wait"
action = "run"
command = "sleep 600"

[final]
text = "Done."
"""


def request_numbers(log: Path) -> list[int]:
    return [json.loads(line)["seq"] for line in log.read_text().splitlines()]


def add_sleeping_validator(project: Path) -> Path:
    """A script validator that sleeps until a file `slow.wake` lies beside it (it sees its own
    folder, read-only, in its sandbox), and scores at once after that. Returns that file. In a
    folder of its own: a file of a validator's folder is an input of every validator whose
    script sits there (frozen with the results), so the wake file must concern this one alone."""
    script = project / "demo" / "validators" / "slow" / "slow.py"
    script.parent.mkdir()
    script.write_text(
        "#!/usr/bin/env python3\n"
        "import json, os, time\n"
        "if not os.path.exists(os.path.join(os.path.dirname(__file__), 'slow.wake')):\n"
        "    time.sleep(600)\n"
        'print(json.dumps({"metrics": {"slept": True}}))\n'
    )
    script.chmod(0o755)
    scenario = project / "demo" / "scenario.toml"
    scenario.write_text(
        scenario.read_text()
        + '\n[validators.slow]\nmode = "script"\nrun = ["validators/slow/slow.py"]\n'
    )
    return script.with_name("slow.wake")


def sleeping_validator(project: Path) -> int | None:
    """The host pid of the sleeping validator (its script is /opt/validator/slow.py inside)."""
    found = processes_running(project, b"/opt/validator/slow.py")
    return found[0] if found else None


def ancestor_running(pid: int, needle: bytes) -> int:
    while (parent := parent_of(pid)) not in (None, 0, 1):
        if needle in command_line(parent):
            return parent
        pid = parent
    raise AssertionError(f"no ancestor of {pid} runs {needle!r}")


def agent_locks(project: Path) -> list[Path]:
    return list((project / RUNS).glob("*/r*/agent.lock"))


def run_of(run_file: Path) -> str:
    """`rule-off/r01` for a file of that run's folder."""
    return f"{run_file.parent.parent.name}/{run_file.parent.name}"


class Silent:
    """An endpoint on 127.0.0.1 that accepts every connection, reads what comes, and never
    answers: a provider that hangs."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.connections.append(self.listener.accept()[0])

    def close(self) -> None:
        self.listener.close()
        for connection in self.connections:
            connection.close()


def test_an_endpoint_that_never_answers_is_a_fault_redone_not_the_agents_timeout(
    tmp_path: Path, pi_installation
) -> None:
    project = project_on_provider(
        tmp_path, pi_installation.root.parents[1], "anthropic", "claude-sonnet-4-5"
    )
    scenario = project / "demo" / "scenario.toml"
    scenario.write_text(scenario.read_text().replace('timeout = "2m"', 'timeout = "8s"'))
    run = project / RUNS / "nothing-off" / "r01"
    silent = Silent()
    try:
        config = project / "config" / "config.yaml"
        config.write_text(
            config.read_text()
            + f"credentials: credentials.toml\nprovider_endpoints:\n  anthropic: {silent.url}\n"
        )
        result = snakemake(project, str(RUNS / "nothing-off" / "r01" / "run.json"))
    finally:
        silent.close()
    text = result.stdout + result.stderr
    assert result.returncode != 0, text[-3000:]
    assert f"fault (the job will be redone): no reply from {silent.url}" in text, text[-3000:]
    assert "agentab: 1 job faulted or were stopped: run the same command again" in text
    assert "Traceback" not in text
    assert not (run / "run.json").exists() and not (run / "measures.json").exists()
    [fault] = [json.loads(line) for line in (run / "faults.jsonl").read_text().splitlines()]
    assert "no reply from" in json.dumps(fault)
    assert job_counts(snakemake(project, "-n").stdout).get("run_agent") == 4  # redone


def test_a_rerun_after_a_validator_edit_stopped_midway_is_redone_by_the_next_invocation(
    tmp_path: Path, pi_installation
) -> None:
    project = make_project(tmp_path / "edited", pi_installation.root.parents[1], repetitions=1)
    wake = add_sleeping_validator(project)
    wake.touch()
    first = snakemake(project)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    wake.unlink()
    script = wake.with_name("slow.py")
    script.write_text(script.read_text() + "# edited: every run's slow validator is due\n")
    output = tmp_path / "snakemake.out"
    with ending_what_is_left(project):
        process = start_snakemake(project, output=output)
        assert wait_until(lambda: sleeping_validator(project), 120), output.read_text()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=PROMPT_STOP_S)
    assert process.returncode != 0
    # The measures of before the edit are made again: the rerun starts from none.
    assert "agentab: 0/4 runs" in output.read_text(), output.read_text()[-3000:]
    stopped = [
        m for m in (project / RUNS).glob("*/r01") if not (m / "validators/slow.json").exists()
    ]
    assert stopped, "the stop left every slow validator's output in place"
    wake.touch()
    again = snakemake(project)
    text = again.stdout + again.stderr
    assert again.returncode == 0, text[-3000:]
    assert "Nothing to be done" not in text and "Traceback" not in text
    progress = [line for line in text.splitlines() if re.match(r"agentab: \d+/4 runs", line)]
    assert progress[0].startswith("agentab: 0/4 runs"), progress
    assert progress[-1].startswith("agentab: 4/4 runs"), progress
    counts = job_counts(text)
    assert "run_agent" not in counts, counts  # the edit touched no agent run
    assert counts["validate_run"] == 4 and counts["measure_run"] == 4, counts
    runs = sorted((project / RUNS).glob("*/r01"))
    assert len(runs) == 4
    for run in runs:
        assert json.loads((run / "validators" / "slow.json").read_text())["ok"]
        assert (run / "measures.json").stat().st_mtime > script.stat().st_mtime


def test_redo_refuses_while_the_workflow_runs_and_deletes_nothing(
    tmp_path: Path, pi_installation
) -> None:
    project = make_project(tmp_path / "busy", pi_installation.root.parents[1], repetitions=1)
    set_agent(project, model="hang", timeout=AGENT_TIMEOUT)
    output = tmp_path / "snakemake.out"
    with ending_what_is_left(project):
        process = start_snakemake(project, output=output)
        assert wait_until(lambda: len(agent_locks(project)) == 2, 120), output.read_text()
        in_flight = run_of(agent_locks(project)[0])
        redo = subprocess.run(
            [str(Path(sys.executable).parent / "agentab"), "redo", "results/demo", in_flight],
            cwd=project, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert agent_locks(project), "redo removed a run in flight"
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=PROMPT_STOP_S)
    assert redo.returncode == 2, redo.stdout + redo.stderr
    assert (
        f"results/demo: a workflow is running on this folder (snakemake, pid {process.pid})"
        in redo.stderr
    )
    assert "Traceback" not in redo.stderr


@pytest.mark.parametrize(
    ("signum", "whole_group"),
    [(signal.SIGTERM, False), (signal.SIGINT, True)],
    ids=["sigterm", "ctrl-c"],
)
def test_a_stop_signal_during_the_synthesis_ends_it_cleanly_and_the_next_invocation_redoes_it(
    tmp_path: Path, pi_installation, signum: int, whole_group: bool
) -> None:
    project = make_project(tmp_path / "stopped", pi_installation.root.parents[1], repetitions=1)
    results = project / "results" / "demo"
    output = tmp_path / "snakemake.out"
    with ending_what_is_left(project):
        process = start_snakemake(project, output=output)
        # The synthesis is a `script:` rule (a Python process of Snakemake's making). Held at
        # its start, it is given a results folder whose secret is a FIFO: it then waits in
        # agentab's code, reading the secret, for as long as the test needs.
        script = held_at_start(project, b".synthesize.py", process)
        assert script, output.read_text()[-3000:]
        with secret_on_a_fifo(results) as reader_waits:
            os.kill(script, signal.SIGCONT)
            assert wait_until(reader_waits, 60), output.read_text()[-3000:]
            # The blank forms do not wait for the synthesis: the signal falls once they are
            # written, so that it meets the synthesis alone. (A Ctrl-C in the first half second
            # of a script rule meets Snakemake's own preamble, before any agentab code runs.)
            forms = results / "forms"
            assert wait_until(lambda: len(list(forms.glob("*.blank.toml"))) == 2, 60)
            os.killpg(process.pid, signum) if whole_group else process.send_signal(signum)
            process.wait(timeout=PROMPT_STOP_S)
        assert not processes_in(project), "a process of the project outlived snakemake"
    text = output.read_text()
    assert process.returncode != 0, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    name = signal.Signals(signum).name
    assert f"agentab: stopped by {name}; `agentab synthesize` did not finish" in text, text[-3000:]
    assert not (results / "synthesis.md").exists(), "a synthesis that did not finish was kept"
    again = snakemake(project)
    text = again.stdout + again.stderr
    assert again.returncode == 0, text[-3000:]
    assert "Traceback" not in text
    counts = job_counts(text)
    assert "run_agent" not in counts and "measure_run" not in counts, counts
    assert counts.get("synthesize") == 1 and counts.get("report") == 1, counts
    assert "4/4 runs" in (results / "synthesis.md").read_text() or counts
    assert (results / "report" / "index.html").exists()


def held_at_start(
    project: Path, needle: bytes, snakemake_process, seconds: float = 180, first_word: bytes = b""
):
    """The pid of the project's process whose command line holds `needle` (and whose program's
    name starts with `first_word`), stopped (SIGSTOP) the moment it appears; None if it never
    does while Snakemake runs."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and snakemake_process.poll() is None:
        for pid in processes_running(project, needle):
            if not Path(command_line(pid).split(b" ")[0].decode()).name.startswith(
                first_word.decode()
            ):
                continue
            os.kill(pid, signal.SIGSTOP)
            return pid
        time.sleep(0.01)
    return None


@contextlib.contextmanager
def secret_on_a_fifo(results: Path):
    """The results folder's `.secret` swapped for a FIFO, and put back after. Yields a check:
    whether a reader has opened the FIFO, which then waits in its read until the block ends."""
    secret = results / ".secret"
    text = secret.read_text()
    secret.unlink()
    os.mkfifo(secret)
    writer: list[int] = []

    def reader_waits() -> bool:
        if not writer:
            with contextlib.suppress(OSError):  # ENXIO: no reader yet
                writer.append(os.open(secret, os.O_WRONLY | os.O_NONBLOCK))
        return bool(writer)

    try:
        yield reader_waits
    finally:
        for fd in writer:
            os.close(fd)
        secret.unlink()
        secret.write_text(text)


def test_a_run_step_killed_before_it_takes_its_lock_is_redone_and_leaves_nothing(
    tmp_path: Path, pi_installation
) -> None:
    project = make_project(tmp_path / "killed", pi_installation.root.parents[1], repetitions=1)
    policy = project / "demo" / "quick.toml"
    policy.write_text(SLEEPS_ONCE.replace("sleep 600", "true"))
    set_agent(project, model="quick.toml", timeout=AGENT_TIMEOUT)
    run = project / RUNS / "nothing-off" / "r01"
    target = str(RUNS / "nothing-off" / "r01" / "run.json")
    output = tmp_path / "snakemake.out"
    with ending_what_is_left(project):
        process = start_snakemake(project, target, output=output)
        # The step's own process (`python -m agentab.steps.run`), not the shell that starts it.
        step = held_at_start(project, b" -m agentab.steps.run ", process, first_word=b"python")
        assert step, output.read_text()[-3000:]
        # Held at its start: before it loads anything, and so before it takes its lock.
        assert not (run / "agent.lock").exists()
        os.kill(step, signal.SIGKILL)
        process.wait(timeout=60)
        assert snakemake(project, "--unlock").returncode == 0
        assert not processes_in(project), "a process of the project outlived snakemake"
        again = snakemake(project, target)
    text = again.stdout + again.stderr
    assert again.returncode == 0, text[-3000:]
    assert "Traceback" not in output.read_text() + text
    assert job_counts(text).get("run_agent") == 1, text[-3000:]
    assert json.loads((run / "run.json").read_text())["outcome"]["status"] == "completed"
    assert not (run / "agent.lock").exists()
    assert not list((project / ".agentab" / "work").iterdir()), "a clone was left behind"


def test_a_rerun_after_a_brick_edit_stopped_midway_is_redone_by_the_next_invocation(
    tmp_path: Path, pi_installation
) -> None:
    project = make_project(tmp_path / "edited", pi_installation.root.parents[1], repetitions=1)
    first = snakemake(project)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    untouched = {run: run.stat().st_mtime for run in (project / RUNS).glob("nothing-*/r01/*.json")}
    assert {path.parent.parent.name for path in untouched} == {"nothing-off", "nothing-high"}
    assert {path.name for path in untouched} >= {"run.json", "measures.json"}
    brick = project / "demo" / "bricks" / "run-tests.md"
    brick.write_text(brick.read_text() + "\nRun them before you answer.\n")  # the rule cells' runs
    output = tmp_path / "snakemake.out"
    with ending_what_is_left(project):
        process = start_snakemake(project, output=output)
        # Both runs of the brick's cells in flight (--cores 2): each holds its lock.
        assert wait_until(lambda: len(agent_locks(project)) == 2, 120), output.read_text()
        assert sorted(run_of(lock) for lock in agent_locks(project)) == [
            "rule-high/r01",
            "rule-off/r01",
        ]
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=PROMPT_STOP_S)
    assert process.returncode != 0
    assert "Traceback" not in output.read_text()
    assert not list((project / RUNS).glob("rule-*/r01/run.json"))
    again = snakemake(project)
    text = again.stdout + again.stderr
    assert again.returncode == 0, text[-3000:]
    assert "Traceback" not in text
    counts = job_counts(text)
    assert counts.get("run_agent") == 2 and counts.get("measure_run") == 2, counts
    redone = sorted((project / RUNS).glob("rule-*/r01"))
    assert len(redone) == 2
    for run in redone:
        assert (run / "measures.json").stat().st_mtime > brick.stat().st_mtime
    assert {run: run.stat().st_mtime for run in untouched} == untouched  # never rerun
