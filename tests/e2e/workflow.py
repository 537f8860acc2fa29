"""Helpers for end-to-end tests of the workflow: a user's project in a temp dir, and snakemake."""

from __future__ import annotations

import contextlib
import http.server
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.processes import default_stop_signals

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"
WORKFLOW_FILES = ("Snakefile", "rules", "scripts", "config", "profiles", "envs")


class Counting(http.server.BaseHTTPRequestHandler):
    """A server on 127.0.0.1 that counts who reached it: what a sandbox must not reach, or what
    only the etalon's setup may (set `Counting.hits = 0` first)."""

    hits = 0

    def do_GET(self):
        Counting.hits += 1
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def make_project(
    root: Path, harnesses_dir: Path, repetitions: int = 2, scenario: str = "demo"
) -> Path:
    """A working directory laid out as a user's: the workflow, and scenarios/<scenario> copied."""
    root.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name)
        else:
            shutil.copy2(source, root / name)
    shutil.copytree(REPO / "scenarios" / scenario, root / scenario)
    toml = root / scenario / "scenario.toml"
    text = toml.read_text()
    toml.write_text(re.sub(r"(?m)^repetitions = \d+", f"repetitions = {repetitions}", text))
    config = root / "config" / "config.yaml"
    config.write_text(
        f"scenarios:\n  - {scenario}/scenario.toml\nresults: results\nstate: .agentab\n"
        f"harnesses: {harnesses_dir}\n"
    )
    return root


# Snakemake's full listing on the terminal (the default profile shows agentab's lines only):
# the tests read its job counts. A test of what a person sees passes `listing=False`.
LISTING = ("--quiet=host",)  # bound by "=": a target after it is not another choice


def snakemake(
    project: Path, *args: str, timeout: float = 600, listing: bool = True
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SNAKEMAKE), "--cores", "2", *(LISTING if listing else ()), *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def set_agent(project: Path, *, model: str, timeout: str, scenario: str = "demo") -> None:
    """The scenario's [agent] with another offline policy (a name, or a file beside the
    scenario) and time limit."""
    scenario = project / scenario / "scenario.toml"
    text = re.sub(r'(?m)^model = "demo"', f"model = {model!r}", scenario.read_text())
    scenario.write_text(re.sub(r'(?m)^timeout = "2m"', f"timeout = {timeout!r}", text))


def start_snakemake(project: Path, *args: str, output: Path) -> subprocess.Popen:
    """Snakemake in the background, leading a process group of its own as a shell's job does
    (so that a test can signal it alone, or its group as Ctrl-C does); its output in `output`.
    Stop signals as in a terminal (`default_stop_signals`).
    """
    with open(output, "w") as log:
        return subprocess.Popen(
            [str(SNAKEMAKE), "--cores", "2", *LISTING, *args],
            cwd=project,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=default_stop_signals,
        )


def processes_in(project: Path) -> list[int]:
    """Every process working in the project (Snakemake, steps), by cwd, and every process they
    started: a sandboxed agent or validator works in a folder of its own (/workspace)."""
    working, parents = [], {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(proc / "cwd")
            parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if Path(cwd).is_relative_to(project):
            working.append(int(proc.name))
    found = set(working)
    grew = True
    while grew:
        children = {pid for pid, parent in parents.items() if parent in found} - found
        found |= children
        grew = bool(children)
    return sorted(found)


def command_line(pid: int) -> bytes:
    """A process's arguments, joined by spaces (b"sleep 600")."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""


def processes_running(project: Path, needle: bytes) -> list[int]:
    """The project's processes whose command line holds `needle` (see `processes_in`)."""
    return [pid for pid in processes_in(project) if needle in command_line(pid)]


@contextlib.contextmanager
def ending_what_is_left(project: Path) -> Iterator[None]:
    """Whatever is still running in the project when the block ends (a test that failed, or
    that left a process on purpose) is killed then, and only that: check what you expect to
    be gone inside the block."""
    try:
        yield
    finally:
        for pid in processes_in(project):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def job_counts(output: str) -> dict[str, int]:
    """The 'Job stats' table snakemake prints: rule -> number of jobs ({} when nothing to do).

    The target rule `all` is left out: it is listed whenever anything else runs.
    """
    counts: dict[str, int] = {}
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line.strip().startswith("job") and "count" in line:
            for row in lines[index + 2 :]:
                parts = row.split()
                if len(parts) != 2 or not parts[1].isdigit():
                    break
                if parts[0] not in ("total", "all"):
                    counts[parts[0]] = int(parts[1])
            break
    return counts


def measures_files(project: Path) -> list[Path]:
    return sorted((project / "results" / "demo" / "runs").glob("*/r*/measures.json"))
