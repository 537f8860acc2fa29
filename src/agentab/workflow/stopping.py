"""Stopping on request: what SIGTERM, SIGINT and SIGHUP do to agentab's steps and to Snakemake.

A step asked to stop ends what it started and leaves no outcome: the first stop signal becomes
`Stopped`, raised in the step's main thread like KeyboardInterrupt, so that every `finally` on
its way runs (the agent's or validator's process group ended, its scratch and work folders
removed, its lock released) and no `run.json` or validator output is written. The step says
what it ended and exits 128 + the signal's number; the next invocation redoes the job.

Snakemake 9.27.1 (local executor) passes no signal on to its jobs. Its shell jobs run in its own
process group; on SIGTERM it only stops starting jobs and waits for the running ones (an agent
run: up to its timeout); on SIGHUP it dies and leaves them running; on SIGINT it waits for them
too. Only a signal sent to the whole group (Ctrl-C in a terminal, `kill -- -PGID`) or to every
process of a SLURM job (`scancel`) reaches the steps. `pass_stop_signals_to_steps`, called when
the workflow starts, passes each stop signal on to the agentab steps Snakemake runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from agentab.workflow.step_client import STEP_MODULE_PREFIX, STOP_SIGNALS, parent_of


class Stopped(BaseException):
    """A step was asked to stop. A BaseException, as KeyboardInterrupt is: no `except
    Exception` on the way swallows it and goes on as if the work were done."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(self.signal_name)

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # what a shell reports for a process ended by the signal


def stop_on_signals() -> None:
    """From now on, the first stop signal raises `Stopped` in the main thread.

    Later signals are ignored: the cleanup the first one started (ending a process group takes
    up to a few seconds) is never cut short. A signal the caller chose to ignore (`nohup`, a
    background job of a shell) stays ignored.
    """
    raised = False

    def stop(signum, frame) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise Stopped(signum)

    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, stop)


# The stop signals this invocation received: a stopped workflow does nothing more at its end.
RECEIVED: list[int] = []


def was_stopped() -> bool:
    return bool(RECEIVED)


def pass_stop_signals_to_steps() -> None:
    """From the Snakefile's `onstart:`: a stop signal Snakemake gets reaches its steps too.

    Snakemake then stops as its own SIGTERM handler makes it (start no job, wait for the
    running ones, which now end at once); SIGHUP, which would kill it outright and leave its
    lock behind, is treated as SIGTERM; SIGINT goes on to its own handler. Must be called
    after Snakemake set its handlers, which it does just before `onstart:`.
    """
    graceful = signal.getsignal(signal.SIGTERM)
    if not callable(graceful):
        return  # Snakemake runs without its handler (not in the main thread): leave it be
    for signum in STOP_SIGNALS:
        current = signal.getsignal(signum)
        if current is signal.SIG_IGN:
            continue
        if signum == signal.SIGINT and callable(current):
            signal.signal(signum, interrupt_and_pass_on(current))
        else:
            signal.signal(signum, stop_gracefully_and_pass_on(graceful))


def stop_gracefully_and_pass_on(graceful: Callable) -> Callable:
    def handler(signum, frame) -> None:
        RECEIVED.append(signum)

        # Snakemake's handler takes the scheduler's lock, which the main thread (interrupted
        # here) may hold: called from here it would wait for itself. A thread waits for the
        # lock instead, marks the workflow as stopping, and only then ends the steps, so that
        # their failed jobs are never replaced by new ones.
        def stop() -> None:
            graceful(signum, None)
            signal_steps(signum)

        threading.Thread(target=stop, name="agentab-stop", daemon=True).start()

    return handler


def interrupt_and_pass_on(interrupt: Callable) -> Callable:
    def handler(signum, frame) -> None:
        RECEIVED.append(signum)
        threading.Thread(target=signal_steps, args=(signum,), daemon=True).start()
        interrupt(signum, frame)

    return handler


def signal_steps(signum: int) -> None:
    steps = running_steps(os.getpid())
    if steps:
        name = signal.Signals(signum).name
        count = "1 step" if len(steps) == 1 else f"{len(steps)} steps"
        print(
            f"agentab: {name}: ending the {count} in flight; what they had not finished has no "
            "outcome and is redone on the next invocation",
            file=sys.stderr,
            flush=True,
        )
    for pid in steps:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def running_steps(ancestor: int) -> list[int]:
    """The agentab steps and `script:` jobs among the descendants of `ancestor` (a shell stands
    in between)."""
    return [
        pid
        for pid in descendants(ancestor)
        if is_agentab_step(argv := command_line(pid)) or is_script_job(argv)
    ]


def descendants(ancestor: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        parent = parent_of(int(stat.parent.name))
        if parent is not None:
            children.setdefault(parent, []).append(int(stat.parent.name))
    found, waiting = [], list(children.get(ancestor, []))
    while waiting:
        pid = waiting.pop()
        found.append(pid)
        waiting.extend(children.get(pid, []))
    return found


def command_line(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").split("\0")


def is_agentab_step(argv: list[str]) -> bool:
    """`python -m agentab.steps.<step> …`: the only processes agentab signals on its own."""
    return any(
        flag == "-m" and module.startswith(STEP_MODULE_PREFIX)
        for flag, module in zip(argv, argv[1:], strict=False)
    )


def is_script_job(argv: list[str]) -> bool:
    """`python …/.snakemake/scripts/tmpXXXX.<name>.py`: the way Snakemake runs a `script:` rule
    (the synthesis, the report, a blank form). Only this workflow's Snakemake is asked, and its
    only scripts are agentab's."""
    script = Path(argv[1]) if len(argv) > 1 else None
    return (
        script is not None
        and script.suffix == ".py"
        and script.parent.name == "scripts"
        and script.parent.parent.name == ".snakemake"
    )
