"""Script validators: any executable, handed one argument (the context file), printing
`{"metrics": {...}, "reasons": {...}}` on stdout.

A non-zero exit, output that is not that JSON, or a timeout makes the run invalid with the
reason recorded. It is never a crash of the workflow and never a failing grade.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentab.confinement.bwrap import NONE, View
from agentab.confinement.endpoint import Sandbox
from agentab.confinement.limits import RunLimits, cgroup_place
from agentab.confinement.views import validator_view
from agentab.run.process import CannotStart, Cap, run_process
from agentab.run.setup import path_entries
from agentab.validators import ValidatorJob, invalid_output, validator_output, validator_timeout_s

SHOWN_OUTPUT_CHARS = 300
# A validator's output kept for audit, per stream: its head and tail past this size.
KEPT_OUTPUT_BYTES = 256 * 1024
# Metrics are a small JSON object; output past this is refused rather than parsed.
MAX_OUTPUT_BYTES = 16 * 1024 * 1024
# What a validator prints is capped as it is written (the run's code prints through it): its
# stdout past what could be metrics, its stderr past what is kept for audit. A validator that
# printed gigabytes never had them on the host's disk.
OUTPUT_CAPS = (Cap(MAX_OUTPUT_BYTES), Cap(KEPT_OUTPUT_BYTES // 2, KEPT_OUTPUT_BYTES // 2))


def script_home(job: ValidatorJob) -> Path:
    return job.workdir.parent / "home"


def script_env(job: ValidatorJob) -> dict[str, str]:
    """A constructed environment: the caller's shell leaks nothing into a validator, and its
    PATH holds the system's tools only: never agentab's own interpreter or virtualenv, whose
    packages (a copy of the project measured, say) are not the run's."""
    home = script_home(job)
    home.mkdir(parents=True, exist_ok=True)
    first = path_entries(job.path, str(job.workdir))
    return {
        "PATH": ":".join([*first, "/usr/local/bin:/usr/bin:/bin"]),
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


def script_view(job: ValidatorJob, script_folder: Path | None) -> View:
    """What the script sees: its checkout and HOME, its own folder, its inputs; nothing else."""
    return validator_view(
        checkout=job.workdir,
        home=script_home(job),
        script_folder=script_folder,
        inputs=job.context_path.parent,
        network=bool(job.spec.options.get("network", False)),
        disk=job.limits.disk if job.limits else None,
    )


def copy_of_script(job: ValidatorJob) -> Path | None:
    """The script, copied into the job's own folder with the folder it sits in (its helpers),
    or alone when it sits at the top of the scenario's folder, whose bricks it must not see.
    The sandbox binds the copy: the scenario's folder is never named inside."""
    first = job.scenario_dir / job.spec.options["run"][0]
    if not first.is_file():
        return None  # a program on PATH, such as `pytest`
    folder = job.workdir.parent / "validator"
    if first.parent.resolve() == job.scenario_dir.resolve():
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(first, folder / first.name)
    else:
        shutil.copytree(first.parent, folder, symlinks=True, dirs_exist_ok=True)
    return folder / first.name


def seen_from_inside(context_path: Path, view: View) -> None:
    """The context file names its files as the script sees them."""
    text = context_path.read_text(encoding="utf-8")
    context_path.write_text(view.inside(text), encoding="utf-8")


def run_script(job: ValidatorJob) -> dict:
    try:
        return _run_script(job)
    finally:
        bound_audit(job)


def _run_script(job: ValidatorJob) -> dict:
    argv = script_argv(job)
    script = copy_of_script(job) if job.confinement != NONE else None
    if script is not None:
        argv[0] = str(script)
    ran = run_confined(job, argv, script.parent if script else None, "script")
    if isinstance(ran, dict):
        return ran
    if ran.result.timed_out:
        return invalid_output(job.name, "script", f"timed out after {ran.timeout:g}s")
    if ran.result.exit_code != 0:
        return invalid_output(job.name, "script", f"exit status {ran.exit_text()}")
    if ran.result.printed[0] > MAX_OUTPUT_BYTES:
        return invalid_output(
            job.name,
            "script",
            f"printed more than {MAX_OUTPUT_BYTES} bytes; metrics are a small JSON",
        )
    text = ran.stdout.read_bytes().decode(errors="replace")
    return parse_script_output(job.name, text, str(job.spec.options["run"][0]))


@dataclass(frozen=True)
class Ran:
    """A confined validator process that ran: how it ended, where its output is."""

    result: Any  # run.process's result: exit_code, timed_out
    reached: list[str]  # the run's limits it reached
    stdout: Path
    stderr: Path
    timeout: float

    def exit_text(self) -> str:
        """`N (it reached …): <its last error line>`, for a reason a person reads."""
        tail = read_tail(self.stderr).decode(errors="replace").strip().splitlines()
        last = (tail or ["(no error output)"])[-1]
        said = f" (it reached the run's limit: {', '.join(self.reached)})" if self.reached else ""
        return f"{self.result.exit_code}{said}: {last[:SHOWN_OUTPUT_CHARS]}"


def run_confined(job: ValidatorJob, argv: list[str], folder: Path | None, mode: str) -> Ran | dict:
    """Run a validator's process in its sandbox (`folder`, its own files, read-only), under the
    run's limits: it runs the run's code. Returns how it ended, or the invalid output of a
    process that could not start."""
    timeout = validator_timeout_s(job.spec)
    env, cwd, sandbox = script_env(job), job.workdir, None
    if job.confinement != NONE:
        view = script_view(job, folder)
        seen_from_inside(job.context_path, view)
        argv = [view.inside(arg) for arg in argv]
        env = {key: view.inside(value) for key, value in env.items()}
        cwd, sandbox = Path(view.cwd), Sandbox(view)
    stdout_path = job.audit_dir / "stdout.txt"
    stderr_path = job.audit_dir / "stderr.txt"
    limits = RunLimits(job.limits, cgroup_place()) if job.limits else contextlib.nullcontext()
    with limits as capped:
        try:
            result = run_process(
                argv,
                env=env,
                cwd=cwd,
                stdout_path=stdout_path,
                stderr_path=stderr_path,
                timeout_s=timeout,
                lock_path=job.lock_path or job.audit_dir / "validator.lock",
                folders=[job.scratch_dir] if job.scratch_dir else [],
                sandbox=sandbox,
                limits=capped,
                caps=OUTPUT_CAPS,
            )
        except CannotStart as error:
            return invalid_output(job.name, mode, str(error))
        reached = capped.reached() if capped else []
    return Ran(result, reached, stdout_path, stderr_path, timeout)


# The line a capped output carries where bytes were cut.
MARKER_ROOM = 200


def bound_audit(job: ValidatorJob) -> None:
    """A validator's output is kept for audit, bounded: its stdout, capped as written at what
    could be metrics, is cut to its head and tail once read."""
    for name in ("stdout.txt", "stderr.txt"):
        path = job.audit_dir / name
        if path.exists():
            keep_bounded(path)


def read_tail(path: Path, size: int = 4096) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(max(0, path.stat().st_size - size))
        return handle.read()


def keep_bounded(source: Path) -> None:
    """Cut a kept output down to its head and tail, saying how much was cut."""
    size = source.stat().st_size
    if size <= KEPT_OUTPUT_BYTES + MARKER_ROOM:  # stderr was capped as written, its line said
        return
    half = KEPT_OUTPUT_BYTES // 2
    with open(source, "rb") as handle:
        head = handle.read(half)
        handle.seek(size - half)
        tail = handle.read()
    cut = f"\n[agentab kept the first and last {half} bytes; {size - 2 * half} bytes between were not kept]\n"
    source.write_bytes(head + cut.encode() + tail)


def parse_script_output(name: str, text: str, source: str = "") -> dict:
    """The validator's output, or its invalid output naming `source` (the file it runs)."""
    output = f"the output of {source}" if source else "output"
    try:
        data = json.loads(text)
    except ValueError:
        shown = text.strip()[:SHOWN_OUTPUT_CHARS] or "(nothing)"
        return invalid_output(name, "script", f'{output} is not JSON {{"metrics": …}}: {shown}')
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        return invalid_output(name, "script", f'{output} has no "metrics" object')
    reasons = {} if data.get("reasons") is None else data["reasons"]
    if not isinstance(reasons, dict):
        return invalid_output(name, "script", f'"reasons" in {output} is not an object')
    return validator_output(
        name, "script", data["metrics"], {k: str(v) for k, v in reasons.items()}
    )
