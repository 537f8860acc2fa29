"""Script validators: any executable, handed one argument (the context file), printing
`{"metrics": {...}, "reasons": {...}}` on stdout.

A non-zero exit, output that is not that JSON, or a timeout makes the run invalid with the
reason recorded. It is never a crash of the workflow and never a failing grade.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from agentab.scenario import parse_duration
from agentab.validators import ValidatorJob, invalid_output, validator_output

DEFAULT_TIMEOUT_S = 300.0
SHOWN_OUTPUT_CHARS = 300


def script_env(job: ValidatorJob) -> dict[str, str]:
    """A constructed environment: the caller's shell leaks nothing into a validator."""
    home = job.audit_dir.parent / "home"
    home.mkdir(parents=True, exist_ok=True)
    python_bin = str(Path(sys.executable).parent)
    return {
        "PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home),
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def script_argv(job: ValidatorJob) -> list[str]:
    run = list(job.spec.options["run"])
    first = job.scenario_dir / run[0]
    if first.exists():
        run[0] = str(first)
    return [*run, str(job.context_path)]


def run_script(job: ValidatorJob) -> dict:
    name = job.spec.name
    timeout = parse_duration(job.spec.options.get("timeout", DEFAULT_TIMEOUT_S))
    argv = script_argv(job)
    try:
        process = subprocess.Popen(
            argv,
            cwd=job.workdir,
            env=script_env(job),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        return invalid_output(name, "script", f"cannot start {argv[0]}: {error}")
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return invalid_output(name, "script", f"timed out after {timeout:g}s")
    (job.audit_dir / "stdout.txt").write_bytes(stdout)
    (job.audit_dir / "stderr.txt").write_bytes(stderr)
    if process.returncode != 0:
        lines = stderr.decode(errors="replace").strip().splitlines() or ["(no error output)"]
        return invalid_output(
            name, "script", f"exit status {process.returncode}: {lines[-1][:SHOWN_OUTPUT_CHARS]}"
        )
    return parse_script_output(name, stdout.decode(errors="replace"))


def parse_script_output(name: str, text: str) -> dict:
    try:
        data = json.loads(text)
    except ValueError:
        shown = text.strip()[:SHOWN_OUTPUT_CHARS] or "(nothing)"
        return invalid_output(name, "script", f'output is not JSON {{"metrics": …}}: {shown}')
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        return invalid_output(name, "script", 'output has no "metrics" object')
    reasons = {} if data.get("reasons") is None else data["reasons"]
    if not isinstance(reasons, dict):
        return invalid_output(name, "script", '"reasons" is not an object')
    return validator_output(
        name, "script", data["metrics"], {k: str(v) for k, v in reasons.items()}
    )
