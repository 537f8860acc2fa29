"""The first call of a `script:` rule: a stop signal before its command has started ends it in
one line, never a traceback.

Snakemake runs a script rule as a fresh Python process, and Ctrl-C reaches the whole process
group, a script that has just started included. Until `run_in_script` puts the steps' own
handlers in place, Python would raise KeyboardInterrupt inside whatever import was running and
print its traceback (seen when Ctrl-C fell as a blank form's script started). This module imports
nothing of agentab's, so that its handlers are in place a few milliseconds into the script.
"""

from __future__ import annotations

import os
import signal
import sys

STARTING_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def stop_quietly_while_starting(command: str) -> None:
    """Until the command's own handlers replace these: a stop signal exits 128 + its number
    with one line, and the job is redone by the next invocation as any stopped job is."""

    def stop(signum: int, _frame) -> None:
        name = signal.Signals(signum).name
        sys.stderr.write(
            f"agentab: stopped by {name} as `agentab {command}` started; its outputs are made "
            "by the next invocation\n"
        )
        sys.stderr.flush()
        os._exit(128 + signum)

    for signum in STARTING_STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored by the caller: it stays so
            signal.signal(signum, stop)
