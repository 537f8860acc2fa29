"""Stop signals: a step turns the first into `Stopped`; Snakemake passes them on to its steps."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agentab.run.process import group_alive, run_process
from agentab.workflow.stopping import (
    STOP_SIGNALS,
    Stopped,
    is_agentab_step,
    is_script_job,
    pass_stop_signals_to_steps,
    running_steps,
    stop_on_signals,
)
from tests.processes import default_stop_signals

# Sleeps under a shell that cannot exec it (the `; true`), as Snakemake runs a step.
STEP_BEHIND_A_SHELL = [
    "sh",
    "-c",
    '"$0" -c "import time; time.sleep(60)" -m agentab.steps.run; true',
    sys.executable,
]


@pytest.fixture(autouse=True)
def own_handlers():
    """Every test here changes the process's signal handlers: they are put back after it."""
    saved = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.fixture
def step_behind_a_shell():
    shell = subprocess.Popen(STEP_BEHIND_A_SHELL, preexec_fn=default_stop_signals)
    yield shell
    for pid in running_steps(shell.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shell.kill()
    shell.wait()


def wait_for(condition, seconds: float = 30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError("never happened")


def test_the_first_stop_signal_raises_stopped_and_later_ones_leave_the_cleanup_alone() -> None:
    stop_on_signals()
    with pytest.raises(Stopped) as stop:
        signal.raise_signal(signal.SIGTERM)
    assert stop.value.signal_name == "SIGTERM"
    assert stop.value.exit_code == 128 + signal.SIGTERM
    signal.raise_signal(signal.SIGINT)  # a second Ctrl-C while the agent is being ended
    signal.raise_signal(signal.SIGHUP)


def test_a_signal_the_caller_ignores_stays_ignored() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup leaves it
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal leaves it
    stop_on_signals()
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    with pytest.raises(Stopped):
        signal.raise_signal(signal.SIGINT)


def test_a_stopped_run_ends_the_whole_process_group_and_releases_the_lock(tmp_path: Path) -> None:
    lock = tmp_path / "agent.lock"
    script = (
        "import os,subprocess,time; open('pgid','w').write(str(os.getpgid(0)));"
        "subprocess.Popen(['sleep','60']); time.sleep(60)"
    )
    stop_on_signals()
    pgid = tmp_path / "pgid"
    ask_to_stop = threading.Thread(
        target=lambda: wait_for(pgid.exists) and os.kill(os.getpid(), signal.SIGTERM)
    )
    ask_to_stop.start()
    with pytest.raises(Stopped):
        run_process(
            [sys.executable, "-c", script],
            env={"PATH": "/usr/bin:/bin"},
            cwd=tmp_path,
            stdout_path=tmp_path / "out",
            stderr_path=tmp_path / "err",
            timeout_s=60,
            lock_path=lock,
        )
    ask_to_stop.join()
    assert not group_alive(int(pgid.read_text()))
    assert not lock.exists()


def test_only_agentab_steps_are_recognised() -> None:
    assert is_agentab_step(["/venv/bin/python3", "-m", "agentab.steps.validate", "--rep", "1"])
    assert not is_agentab_step(["/usr/bin/bash", "-c", "python -m agentab.steps.run > log"])
    assert not is_agentab_step(["pi"])
    assert not is_agentab_step(["python", "-m", "agentab.offline_model"])


def test_a_script_rules_process_is_recognised_as_a_job_to_stop() -> None:
    script = "/project/.snakemake/scripts/tmpab12cd34.synthesize.py"
    assert is_script_job(["/venv/bin/python3", script])
    assert not is_script_job(["/venv/bin/python3", "/project/scripts/synthesize.py"])
    assert not is_script_job(["/usr/bin/bash", "-c", f"python {script}"])
    assert not is_script_job(["python"])


def test_the_steps_behind_snakemakes_shells_are_found(step_behind_a_shell) -> None:
    steps = wait_for(lambda: running_steps(step_behind_a_shell.pid))
    assert step_behind_a_shell.pid not in steps  # the shell is not signalled: it would die first
    assert len(steps) == 1


def test_snakemake_passes_sighup_on_and_stops_as_on_sigterm(step_behind_a_shell) -> None:
    step = wait_for(lambda: running_steps(step_behind_a_shell.pid))[0]
    told = []
    signal.signal(signal.SIGTERM, lambda signum, frame: told.append(signum))  # Snakemake's
    signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as in a terminal, even under nohup
    pass_stop_signals_to_steps()
    signal.raise_signal(signal.SIGHUP)  # it would have killed Snakemake outright
    wait_for(lambda: step not in running_steps(step_behind_a_shell.pid))
    assert told == [signal.SIGHUP]
    assert step_behind_a_shell.poll() is None or step_behind_a_shell.returncode == 0


# A script rule's first lines, then an import that takes its time (agentab's own import of the
# CLI stands for it): the window where a Ctrl-C used to print a KeyboardInterrupt traceback.
SCRIPT_STARTING = """
from agentab.steps.script_start import stop_quietly_while_starting
stop_quietly_while_starting("form")
import sys, time
sys.stdout.write("started\\n"); sys.stdout.flush()
time.sleep(60)
"""


def test_a_stop_signal_as_a_script_rule_starts_ends_it_in_one_line() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT_STARTING],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_stop_signals,
    )
    assert process.stdout.readline() == "started\n"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGINT
    assert stderr == (
        "agentab: stopped by SIGINT as `agentab form` started; its outputs are made by the next "
        "invocation\n"
    )
