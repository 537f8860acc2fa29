"""Runs one workflow step as `python -m <step>` would, and writes to a file how long the
processes the step waited on took: the agent, a script validator, a judge's model calls.

    python benchmarks/own_time.py OWN_FILE agentab.steps.validate --scenario … (the step's args)

`bench_overhead.py` puts it in place of `-m` in a job's command: the job's wall time minus what
this file records is agentab's own time in that job. Only timers are added around the library's
own functions; nothing else changes, and this file imports nothing the steps do not.
"""

import json
import runpy
import sys
import time


def main() -> None:
    own_file, module, *arguments = sys.argv[1:]
    waits: list[dict] = []
    time_processes(waits)
    if module == "agentab.steps.validate":
        time_judge_calls(waits)
    sys.argv = [module, *arguments]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        with open(own_file, "w", encoding="utf-8") as sink:
            json.dump(waits, sink)


def time_processes(waits: list[dict]) -> None:
    """Every agent and script validator is started through `agentab.process.run_process`."""
    import agentab.process as process

    started = process.run_process

    def timed(argv, **options):
        result = started(argv, **options)
        waits.append({"what": "process", "argv0": str(argv[0]), "s": result.duration_s})
        return result

    process.run_process = timed


def time_judge_calls(waits: list[dict]) -> None:
    """A judge's own work is its model's answer: the calls, not the SDK's import or set-up."""
    import agentab.validation as validation

    run_validator = validation.run_validator

    def timed_validator(job):
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
        return run_validator(job)

    validation.run_validator = timed_validator


if __name__ == "__main__":
    main()
