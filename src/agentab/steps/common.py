"""What every step shares: its arguments, its exit-code contract, its errors."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from agentab.errors import AgentabError, disk_full, low_on_space, storage_error
from agentab.etalon import EtalonFault
from agentab.harnesses.base import HarnessFault
from agentab.workflow.step_client import FAULT_EXIT, STOP_SIGNALS
from agentab.workflow.stopping import Stopped, stop_on_signals

USER_ERROR_EXIT = 2


def run_step(
    build: Callable[[argparse.ArgumentParser], None],
    act: Callable[[argparse.Namespace], int],
    ended: Callable[[argparse.Namespace], str] | None = None,
) -> None:
    """Parse the step's arguments, act, and turn a user error into its message and exit 2.

    `ended` says what a stop ended and what becomes of it (`the agent of run rule-off/r01 was
    ended; …`)."""
    parser = argparse.ArgumentParser(prog=f"python -m {sys.modules['__main__'].__spec__.name}")
    build(parser)
    args = parser.parse_args()
    stop_on_signals()
    try:
        code = act(args)
    except Stopped as stop:
        what = ended(args) if ended else "the step was ended; it is redone on the next invocation"
        say(f"agentab: stopped by {stop.signal_name}; {what}")
        code = stop.exit_code
    except (HarnessFault, EtalonFault) as fault:
        if full := disk_filled(args):  # the fault's own reason (no stream, …) would mislead
            say(full.render())
            code = USER_ERROR_EXIT
        else:
            say(f"fault (the job will be redone): {fault.render()}")
            code = FAULT_EXIT
    except AgentabError as error:
        say(error.render())
        code = USER_ERROR_EXIT
    except FileNotFoundError as missing:
        # A file the workflow makes before this step: the step was run alone, or its input
        # was removed under it.
        print(
            f"agentab: {missing.filename}: no such file; the workflow makes it before this step "
            "(run `snakemake` to make it, or check the path given)",
            file=sys.stderr,
        )
        code = USER_ERROR_EXIT
    except OSError as error:
        found = storage_error(error) or disk_filled(args)
        if found is None:
            raise
        say(found.render())
        code = USER_ERROR_EXIT
    flush_or_silence()
    sys.exit(code)


def flush_or_silence() -> None:
    """A log on a full disk must not turn the step's exit status into Python's 120 (a flush
    that failed at exit): what could not be written is dropped."""
    for name in ("stdout", "stderr"):
        try:
            getattr(sys, name).flush()
        except OSError:
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 - for the life of the step


def say(text: str) -> None:
    """To the step's log, which may sit on the full disk itself: then the exit status speaks
    alone, and the workflow's last line says why (`failure_advice`)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except OSError:
        flush_or_silence()


def disk_filled(args: argparse.Namespace):
    """Disk full, said of the folder of the first path the step writes that is all but full, or
    None: a harness that could not write its stream fails in its own words, never these."""
    for value in vars(args).values():
        if isinstance(value, Path) and low_on_space(value):
            return disk_full(value)
    return None


def run_in_script(snakemake, cli_arguments: list[str]) -> None:
    """The one call of a `script:` rule: an `agentab` command, its output sent to the rule's log.

    A stop signal while the command runs ends it as it ends a step: a line in the log, exit
    128 + the signal's number, and Snakemake redoes the job on the next invocation. Once the
    command is done its outputs are whole: a signal then changes nothing."""
    from agentab.cli import main

    stop_on_signals()
    with open(snakemake.log[0], "w") as log:
        sys.stdout = sys.stderr = log
        try:
            code = main([str(argument) for argument in cli_arguments])
        except Stopped as stop:
            say(
                f"agentab: stopped by {stop.signal_name}; `agentab {cli_arguments[0]}` did not "
                "finish; its outputs are made again by the next invocation"
            )
            code = stop.exit_code
        ignore_stop_signals()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    sys.exit(code)


def ignore_stop_signals() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", type=Path, required=True, help="the scenario TOML file")
    parser.add_argument(
        "--cell", required=True, help="the cell's slug (`<slug>--<task>` with tasks)"
    )
    parser.add_argument("--rep", type=int, required=True, help="the repetition, from 1")
