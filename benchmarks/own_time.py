"""Runs workflow steps as they run in the workflow, and writes to a file how long the processes
each step waited on took: the agent, a script validator, a judge's model calls (Linux: it
watches each process's exit through a pidfd).

    python benchmarks/own_time.py OWN_FILE agentab.steps.validate --scenario … (the step's args)
    python benchmarks/own_time.py --serve OWNER MODULE… --scenario=PATH…   (a step server, timed)

Cold, as on a cluster node: `bench_overhead.py` puts it in place of `-m` in a job's command.
Warm, as in a local workflow: the job's command is unchanged and is handed over to a step server
started through this file, which writes each step's record to `own-time.json` in the step's
working folder (the benchmark runs one job at a time). Either way the job's wall time minus
what this file records is agentab's own time in that job. Only watchers and timers are added
around the library's own functions; nothing else changes.
"""

import contextlib
import json
import runpy
import sys
import time

WARM_OWN_FILE = "own-time.json"


def main() -> None:
    if sys.argv[1] == "--serve":
        serve_timed(sys.argv[2:])
        return
    own_file, module, *arguments = sys.argv[1:]
    sys.argv = [module, *arguments]
    with timed(module, own_file):
        runpy.run_module(module, run_name="__main__", alter_sys=True)


@contextlib.contextmanager
def timed(module: str, own_file: str):
    waits: list[dict] = []
    watchers: list = []
    time_processes(waits, watchers)
    if module == "agentab.steps.validate":
        time_judge_calls(waits)
    try:
        yield
    finally:
        for watcher in watchers:
            watcher.join(timeout=5)
        with open(own_file, "w", encoding="utf-8") as sink:
            json.dump(waits, sink)


def serve_timed(argv: list[str]) -> None:
    """The workflow's step server, each forked step timed as `main` times a cold one."""
    import agentab.workflow.step_server as server

    run_step_module = server.run_step_module

    def run_timed(step: list[str]) -> int:
        with timed(step[0], WARM_OWN_FILE):
            return run_step_module(step)

    server.run_step_module = run_timed
    server.main(argv)


def time_processes(waits: list[dict], watchers: list) -> None:
    """Every agent and script validator is started by `agentab.run.process.run_process`. Its own
    time runs from its start to its exit, seen the moment it happens (a pidfd): the time the
    step takes to notice the exit is the step's, not the process's."""
    import os
    import select
    import subprocess
    import threading
    import types

    import agentab.run.process as process

    class WatchedPopen(subprocess.Popen):
        def __init__(self, argv, *args, **options):
            started = time.perf_counter()
            super().__init__(argv, *args, **options)
            exited = os.pidfd_open(self.pid)

            def watch() -> None:
                select.select([exited], [], [])
                seconds = time.perf_counter() - started
                waits.append({"what": "process", "argv0": str(argv[0]), "s": seconds})
                os.close(exited)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            watchers.append(watcher)

    # Only agentab.run.process sees the watched Popen: git and the rest start processes as ever.
    watched = types.ModuleType("subprocess")
    watched.__dict__.update(subprocess.__dict__)
    watched.Popen = WatchedPopen
    process.subprocess = watched


def time_judge_calls(waits: list[dict]) -> None:
    """A judge's own work is its model's answer: the calls, not the SDK's import or set-up."""
    import agentab.validators.validation as validation

    run_validator = validation.run_validator

    def timed_validator(job, *rest):
        if job.spec.mode == "judge":
            import agentab.validators.judge as judge

            ask = judge._verdict_with_retries

            def timed_ask(*args, **options):
                start = time.perf_counter()
                try:
                    return ask(*args, **options)
                finally:
                    waits.append({"what": "judge", "s": time.perf_counter() - start})

            judge._verdict_with_retries = timed_ask
        return run_validator(job, *rest)

    validation.run_validator = timed_validator


if __name__ == "__main__":
    main()
