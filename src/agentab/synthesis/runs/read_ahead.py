"""Every run's measures.json read ahead, by a forked process, while the synthesis imports.

`agentab synthesize` spends about a fifth of its time importing numpy and its own modules, and
as much again in the system calls that list the run folders and read 10 000 small files. The two
need nothing of each other: `start`, called before the heavy imports, forks a process that lists
and reads the files, and `ReadAhead.files()` takes what it read, in one pickle through a pipe.
Where no fork can be taken, or the process fails, the files are read here instead: what the
synthesis gets never depends on it.

The process only reads bytes; every check of what a file says happens in the synthesis. The
pickle loaded here is this module's own list of (str, str, bytes | int) tuples, a file's bytes
inside it as one length-prefixed string: nothing a run wrote can become pickle code. Its length
goes first, so the synthesis knows it has all of it while the process goes on with a task of
its own, if it was given one (`agentab synthesize`: measures.csv, from the same bytes by the
same code, on a core the synthesis leaves idle while it parses); the synthesis asks at the end
whether that task ran to its end (`followed`), and does it itself if not.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pickle
import signal
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentab.files import read_bytes
from agentab.layout import ResultsFolder, RunFolder
from agentab.workers import can_fork

# The layout's names of the parts, for the folder scan: with thousands of runs, a Path per
# candidate is a noticeable share of a synthesis, so the scan joins strings.
MEASURES_FILE = RunFolder(Path()).measures.name
RUNS_FOLDER = ResultsFolder(Path()).runs_root.name
# What one read of the pipe asks for, and what the pipe may hold (Linux: up to
# /proc/sys/fs/pipe-max-size, 1 MiB by default): fewer turns between the two processes.
PIPE_BYTES = 1 << 20

# The pickle's length, sent first: the synthesis knows it has all of it without waiting for the
# process, which may go on with a task of its own.
LENGTH = struct.Struct("<Q")
# (slug, run folder, content): the file's bytes, or the errno its reading failed with.
MeasuresFile = tuple[str, str, bytes | int]


def run_folders(runs_root: str) -> list[tuple[str, str]]:
    """(slug, folder) pairs of every `runs/<slug>/r*` folder, sorted as their paths sort.

    A directory scan rather than a glob: with thousands of runs, building and matching a Path
    per candidate is a noticeable share of a synthesis. A folder may hold no measures.json.
    """
    found = [
        (slug, rep)
        for slug in _subfolders(runs_root)
        for rep in _subfolders(os.path.join(runs_root, slug), prefix="r")
    ]
    found.sort()
    return found


def _subfolders(folder: str, prefix: str = "") -> list[str]:
    """Names of the visible folders in a folder (a glob's `*` skips hidden names)."""
    try:
        with os.scandir(folder) as entries:
            return [
                entry.name
                for entry in entries
                if entry.name.startswith(prefix)
                and not entry.name.startswith(".")
                and entry.is_dir()
            ]
    except (FileNotFoundError, NotADirectoryError):
        return []


def read_measures_files(runs_root: str) -> list[MeasuresFile]:
    """Every run folder's measures.json, in path order (ENOENT: the folder holds none)."""
    return [
        (slug, rep, file_content(f"{runs_root}/{slug}/{rep}/{MEASURES_FILE}"))
        for slug, rep in run_folders(runs_root)
    ]


def file_content(path: str) -> bytes | int:
    """The file's bytes, or the errno its reading failed with."""
    try:
        return read_bytes(path)
    except OSError as error:
        return error.errno or errno.EIO


def reading_error(content: int, path: str) -> OSError:
    """The error `read_bytes(path)` raised, from the errno `read_measures_files` kept."""
    return OSError(content, os.strerror(content), path)


@dataclass
class ReadAhead:
    """The reading of one results folder's measures files, under way in process `pid` (None:
    nothing was forked, they are read when asked for). `follows`: the process goes on, once it
    has sent them, with a task of its own (`start`'s `then`)."""

    runs_root: str
    pid: int | None = None
    pipe: int | None = None
    follows: bool = False

    def files(self) -> list[MeasuresFile]:
        """What the process read; read here if it failed."""
        found = self._collect()
        return read_measures_files(self.runs_root) if found is None else found

    def followed(self) -> bool:
        """Whether the process's task after the files ran to its end (waits for it)."""
        return self.follows and self.pid is not None and self._end() == 0

    def close(self) -> None:
        """Ends the process if it is still there: its files never asked for (its write then
        fails), or its task after them no longer wanted (it is killed, whether or not its
        files were taken: a reading small enough for the pipe goes on to the task unasked)."""
        if self.pid is not None:
            if self.follows:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
            self._end()

    def _collect(self) -> list[MeasuresFile] | None:
        if self.pipe is None:
            return None
        payload = _received(self.pipe)
        os.close(self.pipe)
        self.pipe = None
        if payload is None or not self.follows:
            # Cut short (the process failed before it sent everything), or nothing follows:
            # the process is reaped now.
            self._end()
        return None if payload is None else pickle.loads(payload)

    def _end(self) -> int:
        """The process's exit status, once it is gone (-1: it was reaped by someone else)."""
        if self.pipe is not None:
            os.close(self.pipe)
            self.pipe = None
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:  # SIGCHLD ignored: the system reaped it
            status = -1
        self.pid = None
        return status


def _received(pipe: int) -> bytes | None:
    """The pickle the process sent, its length first; None if the pipe ends before it does."""
    header = _read_exactly(pipe, LENGTH.size)
    return None if header is None else _read_exactly(pipe, LENGTH.unpack(header)[0])


def _read_exactly(pipe: int, size: int) -> bytes | None:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        count = os.readv(pipe, [view[got:]])
        if count == 0:
            return None
        got += count
    return bytes(buffer)


def start(
    results_dir: Path, then: Callable[[list[MeasuresFile]], object] | None = None
) -> ReadAhead:
    """The reading of `results_dir`'s measures files, started in a forked process where one
    can be taken (one thread here, a platform that forks). `then`, if given, runs in that
    process on what it read, once it has sent it (`agentab synthesize` writes measures.csv
    there); `ReadAhead.followed` says whether it ran to its end."""
    runs_root = str(ResultsFolder(Path(results_dir)).runs_root)
    if not can_fork():
        return ReadAhead(runs_root)
    read_end, write_end = os.pipe()
    with contextlib.suppress(AttributeError, OSError):  # Linux alone sizes a pipe
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _read_and_send(runs_root, write_end, then)
    os.close(write_end)
    return ReadAhead(runs_root, pid, read_end, follows=then is not None)


def _read_and_send(runs_root: str, pipe: int, then) -> None:
    """The forked process: it reads, writes one pickle, runs `then` if given, and leaves
    without the interpreter's exit (no atexit handler, no buffer flushed twice). Any failure,
    a signal's included, is an exit status the synthesis reads as "do it yourself"."""
    code = 1
    try:
        files = read_measures_files(runs_root)
        payload = pickle.dumps(files, pickle.HIGHEST_PROTOCOL)
        _send(pipe, LENGTH.pack(len(payload)))
        _send(pipe, payload)
        os.close(pipe)
        if then is not None:
            # Silent: what it would say (a warning of the scenario's), the synthesis says.
            sys.stdout = sys.stderr = quiet = open(os.devnull, "w")  # noqa: SIM115 (open until _exit)
            os.dup2(quiet.fileno(), 1)
            os.dup2(quiet.fileno(), 2)
            then(files)
        code = 0
    finally:
        os._exit(code)


def _send(pipe: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(pipe, view[:PIPE_BYTES]) :]
