"""The harness adapter interface, and the process runner every adapter shares.

An adapter (one file under `harnesses/`) owns everything that differs between agent CLIs:

- `install(version, harnesses_dir)`: a pinned, project-local install into
  `<harnesses_dir>/<harness>/<version>/`, idempotent, with `installed.json` written last (the
  marker a workflow rule uses as its output).
- `installation(version, harnesses_dir)`: the existing install, refused (AgentabError naming
  `[agent].version`) when missing or when the binary reports another version.
- `prepare(spec, installation)`: the `Invocation` of one run: argv, the constructed environment,
  the files to write into the run's private scratch dir (agent config dir, HOME, TMPDIR) and the
  bricks to place inside the clone, each brick saying how it was passed.
- `read_stream(path)`: the raw stream the harness printed, reduced to `StreamFacts`.
- `classify(facts, exit_code, timed_out)`: an `Outcome` (`completed`, or `failed` with a
  reason: the scenario's timeout, or the agent's own error such as a provider error), or a
  `HarnessFault` when the harness could not do the run at all (crash, cannot start). A fault is
  redone; an outcome is measured.

`run_process` is the one way an agent process is started: standard input closed, a new
session (so the whole process group can be killed at the timeout), stdout written byte for byte
to the stream file, and a lock file holding the process group id so that a twin left running
by a killed workflow is ended before the same run starts again.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from agentab.errors import AgentabError

# How long a process group gets between SIGTERM and SIGKILL, and to disappear after SIGKILL.
TERMINATE_GRACE_S = 2.0
VANISH_WAIT_S = 5.0


class HarnessFault(AgentabError):
    """The harness could not do the run (crash, cannot start, refused install): redo it."""


@dataclass(frozen=True)
class BrickFile:
    """A brick as the harness receives it: kind, path as written, absolute path, digest."""

    kind: str  # context_files | extensions | skills | agents
    rel: str
    path: Path
    sha256: str


@dataclass(frozen=True)
class RunSpec:
    """Everything one run of the agent depends on, and where its files go."""

    clone: Path  # the fresh clone the agent works in (its cwd)
    scratch: Path  # private, empty dir for the agent's config dir, HOME and TMPDIR
    prompt: str
    provider: str
    model: str
    thinking: str
    timeout_s: float
    bricks: tuple[BrickFile, ...] = ()
    model_base_url: str | None = None  # the offline model's URL when provider is "offline"
    api_key: str | None = None  # from the credentials file; passed in the env, never recorded


@dataclass
class Invocation:
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    files: dict[Path, str] = field(default_factory=dict)  # absolute path -> text, in scratch
    clone_files: dict[str, Path] = field(default_factory=dict)  # clone-relative path -> source
    passed_as: dict[str, str] = field(default_factory=dict)  # brick rel -> how it was passed
    secret_env: frozenset[str] = frozenset()  # names whose values run.json must not show

    def env_for_record(self) -> dict[str, str]:
        return {k: ("<secret>" if k in self.secret_env else v) for k, v in sorted(self.env.items())}


@dataclass(frozen=True)
class Installation:
    harness: str
    version: str
    root: Path  # <harnesses_dir>/<harness>/<version>
    entry: Path  # the file that starts the harness
    node: Path | None = None


@dataclass
class StreamFacts:
    turns: int = 0
    tool_calls: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(
        default_factory=lambda: {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    )
    cost_usd: float | None = None
    final_message: str = ""
    stop_reason: str = ""
    errors: list[str] = field(default_factory=list)
    settled: bool = False  # the harness said it had nothing more to do

    def as_dict(self) -> dict:
        return {
            "turns": self.turns,
            "tool_calls": dict(sorted(self.tool_calls.items())),
            "tokens": dict(self.tokens),
            "cost_usd": self.cost_usd,
            "final_message": self.final_message,
            "stop_reason": self.stop_reason,
            "errors": list(self.errors),
        }


@dataclass(frozen=True)
class Outcome:
    status: str  # completed | failed
    reason: str | None = None

    def as_dict(self) -> dict:
        return {"status": self.status, "reason": self.reason}


@dataclass(frozen=True)
class ProcessResult:
    exit_code: int | None
    timed_out: bool
    duration_s: float


class Harness(ABC):
    name: str

    @abstractmethod
    def install(self, version: str, harnesses_dir: Path) -> Installation: ...

    @abstractmethod
    def installation(self, version: str, harnesses_dir: Path) -> Installation: ...

    @abstractmethod
    def prepare(self, spec: RunSpec, installation: Installation) -> Invocation: ...

    @abstractmethod
    def read_stream(self, path: Path) -> StreamFacts: ...

    @abstractmethod
    def classify(self, facts: StreamFacts, exit_code: int | None, timed_out: bool) -> Outcome: ...


# ---------------------------------------------------------------------------- process runner


def run_process(
    invocation: Invocation, stream_path: Path, stderr_path: Path, timeout_s: float, lock_path: Path
) -> ProcessResult:
    """Run the agent to its end or to the timeout; the whole process group never outlives it."""
    end_stale_twin(lock_path)
    started = time.monotonic()
    with open(stream_path, "wb") as stream, open(stderr_path, "wb") as stderr:
        try:
            process = subprocess.Popen(
                invocation.argv,
                cwd=invocation.cwd,
                env=invocation.env,
                stdin=subprocess.DEVNULL,
                stdout=stream,
                stderr=stderr,
                start_new_session=True,
            )
        except OSError as error:
            raise HarnessFault(f"cannot start {invocation.argv[0]}: {error}") from None
        pgid = process.pid  # a new session: the leader's pid is the group id
        write_lock(lock_path, pgid)
        try:
            exit_code = process.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            exit_code = None
        finally:
            # Tools may leave background children even after a normal exit; none may outlive it.
            end_process_group(pgid, process)
            release_lock(lock_path, pgid)
    return ProcessResult(exit_code, timed_out, time.monotonic() - started)


def end_process_group(pgid: int, leader: subprocess.Popen | None = None) -> None:
    if not group_alive(pgid):
        return
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + TERMINATE_GRACE_S
    while time.monotonic() < deadline and group_alive(pgid):
        reap(leader)
        time.sleep(0.05)
    signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + VANISH_WAIT_S
    while time.monotonic() < deadline and group_alive(pgid):
        reap(leader)
        time.sleep(0.05)
    reap(leader)


def reap(leader: subprocess.Popen | None) -> None:
    # A zombie leader still counts as a member of its group until it is waited for.
    if leader is not None:
        leader.poll()


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether a process group still has a member that is not a zombie."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return any(state != "Z" for state in group_member_states(pgid)) or not Path("/proc").exists()


def group_member_states(pgid: int) -> list[str]:
    states = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            states.append(fields[0])
    return states


def process_start_ticks(pid: int) -> str | None:
    """The start time of a pid (clock ticks since boot): tells a pid from a later reuse of it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def write_lock(lock_path: Path, pgid: int) -> None:
    record = {"pgid": pgid, "start": process_start_ticks(pgid)}
    lock_path.write_text(json.dumps(record) + "\n")


def release_lock(lock_path: Path, pgid: int) -> None:
    """Remove the lock if it is still ours: a later attempt may have taken it since."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if int(json.loads(lock_path.read_text())["pgid"]) == pgid:
            lock_path.unlink()


def end_stale_twin(lock_path: Path) -> None:
    """End an agent left running by an earlier attempt of the same run (e.g. after kill -9)."""
    if not lock_path.exists():
        return
    try:
        record = json.loads(lock_path.read_text())
        pgid = int(record["pgid"])
    except (ValueError, KeyError, TypeError, OSError):
        lock_path.unlink(missing_ok=True)
        return
    # Linux never reuses a pid while a group of that id has members, so the group is ours when
    # its leader is the very process that took the lock, or when the leader is gone.
    leader_start = process_start_ticks(pgid)
    if leader_start == record.get("start") or leader_start is None:
        end_process_group(pgid)
    lock_path.unlink(missing_ok=True)
