"""Processes agentab starts and must be able to end: agents and validators.

Every such process gets standard input closed and a new session, so that its whole process
group can be ended at a timeout (tools leave background children). A lock file holds the group
id and the leader's start time, so that a twin left running by a killed workflow (kill -9 of
Snakemake re-parents it) is ended before the same job starts again, and a reused pid is never
mistaken for it. It also names the attempt's private folders, which a killed step could not
remove: they go with the twin.

What such a process prints is hostile in size as in content: each of its two outputs may be
capped (`Cap`) as it is written, never cut afterwards, so that a validator printing gigabytes
never has them on the host's disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agentab.confinement.limits import unmount_under

# How long a process group gets between SIGTERM and SIGKILL, and to disappear after SIGKILL.
TERMINATE_GRACE_S = 2.0
VANISH_WAIT_S = 5.0


class CannotStart(Exception):
    """The program could not be started (missing, not executable)."""


@dataclass(frozen=True)
class ProcessResult:
    exit_code: int | None
    timed_out: bool
    duration_s: float
    # What the process printed on its standard output and error, in bytes, kept or not.
    printed: tuple[int, int] = (0, 0)

    def cut(self, caps: tuple[Cap | None, Cap | None]) -> tuple[bool, bool]:
        """Whether each output was cut at its cap."""
        return tuple(
            cap is not None and size > cap.size
            for size, cap in zip(self.printed, caps, strict=True)
        )


@dataclass(frozen=True)
class Cap:
    """At most `head` bytes of an output kept from its start and `tail` from its end, and a
    line between that says how many were cut. The head is written as it arrives; the tail, held
    in memory, when the output ends."""

    head: int
    tail: int = 0

    @property
    def size(self) -> int:
        return self.head + self.tail


def run_process(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    stdout_path: Path,
    stderr_path: Path,
    timeout_s: float,
    lock_path: Path,
    folders: Sequence[Path] = (),
    sandbox=None,
    limits=None,
    caps: tuple[Cap | None, Cap | None] = (None, None),
) -> ProcessResult:
    """Run a program to its end or to the timeout; its whole process group never outlives it.

    `folders` are the attempt's own (its scratch, its clone), removed with it if it is found
    stale. `sandbox` (a `confinement.endpoint.Sandbox`) confines it: `argv`, `env` and `cwd` are then
    what the program sees inside. `limits` (a `confinement.limits.RunLimits`, entered) caps it
    from its first instruction. `caps` bound what is kept of its standard output and error.
    Raises CannotStart when the program cannot be started at all.
    """
    end_stale_twin(lock_path)
    started = time.monotonic()
    pass_fds: tuple[int, ...] = ()
    if sandbox is not None:
        argv, env, cwd, pass_fds = sandbox.command(argv, env), {}, Path("/"), sandbox.pass_fds
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        # Not the files: a process's descriptors are readable links (/proc/self/fd/1), and the
        # files' paths name the run's folder, hence its cell. Sockets, not pipes, for a sandbox:
        # a pipe can be opened again through /proc/<pid>/fd/1 by any process of the same user
        # (the agent's bash, writing into the harness's stream), a socket cannot.
        ours, theirs = output_channels(sandboxed=sandbox is not None)
        try:
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=theirs[0],
                stderr=theirs[1],
                start_new_session=True,
                pass_fds=pass_fds,
                preexec_fn=limits.enter if limits is not None else None,
            )
        except OSError as error:
            if sandbox is not None:
                sandbox.close()
            for end in ours or ():
                end.close()
            raise CannotStart(f"cannot start {argv[0]}: {error}") from None
        finally:
            for end in theirs:
                if end is not subprocess.PIPE:
                    end.close()
        if ours is None:
            ours = (process.stdout, process.stderr)
        sinks = [CappedSink(stdout, caps[0]), CappedSink(stderr, caps[1])]
        pumps = [pump(ours[0], sinks[0]), pump(ours[1], sinks[1])]
        pgid = process.pid  # a new session: the leader's pid is the group id
        write_lock(lock_path, pgid, folders)
        try:
            if sandbox is not None:
                sandbox.started(process.pid)
            exit_code = wait_exactly(process, timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            exit_code = None
        except OSError as error:  # the sandbox could not be set up around it
            raise CannotStart(str(error)) from None
        finally:
            # Tools may leave background children even after a normal exit; none may outlive it.
            # A sandbox's own (setsid, nohup) end with it: its pid namespace dies with bwrap.
            end_process_group(pgid, process)
            release_lock(lock_path, pgid)
            if sandbox is not None:
                sandbox.close()
            for thread in pumps:
                thread.join(VANISH_WAIT_S)
            for sink in sinks:
                sink.close()
    printed = (sinks[0].total, sinks[1].total)
    return ProcessResult(exit_code, timed_out, time.monotonic() - started, printed)


def output_channels(sandboxed: bool):
    """(our ends, the process's ends) of its standard output and error: two socket pairs for a
    sandboxed process, pipes (ours then come from Popen) for any other."""
    if not sandboxed:
        return None, (subprocess.PIPE, subprocess.PIPE)
    pairs = [socket.socketpair(), socket.socketpair()]
    for ours, _ in pairs:
        ours.shutdown(socket.SHUT_WR)  # nothing is ever sent to the process this way
    return tuple(ours for ours, _ in pairs), tuple(theirs for _, theirs in pairs)


class CappedSink:
    """A file an output is written into as it arrives, within its `Cap` (none: whole)."""

    def __init__(self, handle, cap: Cap | None):
        self.handle, self.cap = handle, cap
        self.total = 0
        self.tail = bytearray()
        self.closed = False
        self.lock = threading.Lock()

    def write(self, chunk: bytes) -> None:
        with self.lock:
            if self.closed:
                return
            kept = self.total
            self.total += len(chunk)
            if self.cap is None:
                self.handle.write(chunk)
                self.handle.flush()
                return
            room = max(0, self.cap.head - kept)
            if room:
                self.handle.write(chunk[:room])
                self.handle.flush()
            if self.cap.tail and len(chunk) > room:
                self.tail += chunk[room:]
                del self.tail[: -self.cap.tail]

    def close(self) -> None:
        """The tail, after a line that says how much was cut: once, when the output ended (a
        writer left behind past the join writes nothing more)."""
        with self.lock:
            if self.closed or self.cap is None:
                self.closed = True
                return
            self.closed = True
            cut = self.total - self.cap.head - len(self.tail)
            if cut > 0:
                self.handle.write(
                    f"\n[agentab kept the first {self.cap.head} and the last {len(self.tail)} "
                    f"bytes of this output; {cut} bytes between were not kept]\n".encode()
                )
            self.handle.write(bytes(self.tail))
            self.handle.flush()


def pump(source, sink) -> threading.Thread:
    """Copy a pipe into a file as output arrives, until every writer has closed it."""

    def copy() -> None:
        with contextlib.suppress(OSError, ValueError):
            fd = source.fileno()
            while chunk := os.read(fd, 65536):
                sink.write(chunk)
        with contextlib.suppress(OSError):
            source.close()

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    return thread


def wait_exactly(process: subprocess.Popen, timeout_s: float) -> int:
    """The exit code, noticed the moment the process ends, or TimeoutExpired.

    `Popen.wait(timeout)` polls with sleeps growing to 50 ms, so every run and validator job
    learned of its child's end up to 50 ms late; a pidfd becomes readable at the exit itself."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
        return process.wait(timeout=timeout_s)
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout_s)
    finally:
        os.close(pidfd)
    if not ready:
        raise subprocess.TimeoutExpired(process.args, timeout_s)
    return process.wait()


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


def write_lock(lock_path: Path, pgid: int, folders: Sequence[Path] = ()) -> None:
    """The group to end, the agentab step that owns it (a killed workflow orphans both), and
    the folders of that attempt, which its owner removes unless it is killed."""
    owner = os.getpid()
    record = {
        "pgid": pgid,
        "start": process_start_ticks(pgid),
        "owner": owner,
        "owner_start": process_start_ticks(owner),
        "folders": [str(Path(folder).absolute()) for folder in folders],
    }
    lock_path.parent.mkdir(parents=True, exist_ok=True)
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
    end_stale_owner(record)
    leader_start = process_start_ticks(pgid)
    if leader_start == record.get("start") or leader_start is None:
        end_process_group(pgid)
    remove_stale_folders(record)
    lock_path.unlink(missing_ok=True)


def end_stale_owner(record: dict) -> None:
    """End the orphaned step that started a stale twin, so that it cannot write its outputs
    (or clean its folders) over the attempt that redoes its job."""
    owner = record.get("owner")
    if not isinstance(owner, int) or owner == os.getpid():
        return
    if process_start_ticks(owner) == record.get("owner_start") is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(owner, signal.SIGKILL)


def remove_stale_folders(record: dict) -> None:
    """The stale attempt's own folders: its owner, killed, never removed them. Each attempt's
    folders have names of their own, so this never touches the attempt that redoes the job."""
    for folder in record.get("folders") or []:
        if isinstance(folder, str) and Path(folder).is_absolute():
            unmount_under(Path(folder))
            shutil.rmtree(folder, ignore_errors=True)
