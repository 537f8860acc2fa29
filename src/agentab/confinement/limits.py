"""What a run may take of the machine: memory, processes, disk, the size of its patch.

Resource settings move agent scores by several points, so they are part of what is measured:
`[protocol] limits` in the scenario, the same for every cell, recorded in every run.json. The
kernel enforces them, never a poll:

- memory and processes: a cgroup per run (`memory.max` / `memory.limit_in_bytes`, `pids.max`)
  where the host lets agentab make one (root, or a delegated cgroup v2 subtree); every process
  the run starts is in it from its first instruction (the child joins it before it executes
  anything). Elsewhere, per-process rlimits (RLIMIT_DATA, RLIMIT_NPROC), which the kernel
  enforces without telling anyone: run.json says which.
- disk: a size-capped tmpfs holds everything the run can write (its clone, HOME, /tmp): one
  mounted by agentab where it may mount (root), else bwrap's own for /tmp and RLIMIT_FSIZE for
  any one file.
- the patch: agentab counts its bytes while git writes it and keeps none past the cap.

A run that reached a limit is the agent's outcome `failed: limit <which>`: measured, never a
fault, never redone.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import resource
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(i?B)?", re.IGNORECASE)
UNIT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
LIMIT_KEYS = ("memory", "processes", "disk", "patch")
LIMITS_EXAMPLE = 'limits = { memory = "4G", processes = 512, disk = "4G", patch = "5M" }'
LIMITS_FIX = (
    f"add to [protocol]: {LIMITS_EXAMPLE} (sizes in K, M, G; processes counts threads too; "
    "disk holds the clone with the etalon's environment, HOME and /tmp: docs/confinement.md)"
)
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "agentab-"
# A filesystem with less free than this when the run ended was full: the kernel refused the
# agent a write (ENOSPC); tmpfs keeps no count of refusals, so what is left tells it.
FULL_MARGIN = 1 << 20
MS_NOSUID, MS_NODEV, MNT_DETACH = 0x2, 0x4, 0x2


def parse_size(value: int | str) -> int:
    """Bytes, from `"512M"`, `"2G"`, `"1.5GiB"` or a whole number of bytes (binary units)."""
    if isinstance(value, int):
        return value
    found = SIZE.fullmatch(value.strip())
    if found is None:
        raise ValueError(f"{value!r} is not a size")
    number, unit, _ = found.groups()
    return int(float(number) * UNIT[unit.upper()])


def size_problem(value) -> str | None:
    """Why a value is not a size, said for a person, or None."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return f"{value!r} is not a size"
    try:
        size = parse_size(value)
    except ValueError as error:
        return str(error)
    if size < 1 << 20:
        return f"{value!r} is less than one megabyte: no agent can run in it (a slip of unit?)"
    return None


def shown_size(size: int) -> str:
    for unit in ("T", "G", "M", "K"):
        if size >= UNIT[unit] and size % UNIT[unit] == 0:
            return f"{size // UNIT[unit]}{unit}"
    return str(size)


@dataclass(frozen=True)
class Limits:
    """`[protocol] limits`: the same for every cell of a scenario."""

    memory: int  # bytes, every process of the run together
    processes: int  # processes and threads at once
    disk: int  # bytes: the clone, HOME and /tmp together
    patch: int  # bytes of result.patch

    @classmethod
    def from_table(cls, table: dict) -> Limits:
        return cls(
            memory=parse_size(table["memory"]),
            processes=int(table["processes"]),
            disk=parse_size(table["disk"]),
            patch=parse_size(table["patch"]),
        )

    def as_dict(self) -> dict:
        return {
            "memory": shown_size(self.memory),
            "processes": self.processes,
            "disk": shown_size(self.disk),
            "patch": shown_size(self.patch),
        }


def limit_reason(reached: list[str], limits: Limits, patch_size: int = 0) -> str:
    """The reason of a run that reached a limit: `limit <which>: <what happened>`."""
    said = {
        "memory": f"the kernel ended a process at the run's memory limit ({shown_size(limits.memory)})",
        "processes": f"the kernel refused a process or thread past the limit ({limits.processes})",
        "disk": f"the run filled its disk ({shown_size(limits.disk)}: clone, HOME and /tmp)",
        "output": "what it wrote to agentab (its stream, its transcript, a request to its model) "
        f"passed the run's disk ({shown_size(limits.disk)}): the rest was not kept",
        "patch": f"its patch is {patch_size} bytes, over the cap ({shown_size(limits.patch)}): "
        "it is not kept, and no validator applies it",
    }
    return f"limit {', '.join(reached)}: " + "; ".join(said[which] for which in reached)


# --------------------------------------------------------------------------- cgroups


@dataclass(frozen=True)
class CgroupPlace:
    """Where agentab may make a run's cgroups: one folder per controller (v1), or one (v2)."""

    version: int
    memory: Path
    pids: Path


def own_cgroups() -> dict[str, str]:
    """controller (or "" for cgroup v2) -> this process's cgroup path."""
    found = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                found[controller] = path
    return found


@functools.cache
def cgroup_place() -> CgroupPlace | None:
    """Where a run's cgroups can be made on this host, or None (then rlimits)."""
    mine = own_cgroups()
    if (CGROUP_ROOT / "cgroup.controllers").exists() and "" in mine:
        return _v2_place(CGROUP_ROOT / mine[""].lstrip("/"))
    memory, pids = CGROUP_ROOT / "memory", CGROUP_ROOT / "pids"
    if "memory" in mine and "pids" in mine and memory.is_dir() and pids.is_dir():
        place = CgroupPlace(1, memory / mine["memory"].lstrip("/"), pids / mine["pids"].lstrip("/"))
        if all(os.access(folder, os.W_OK) for folder in (place.memory, place.pids)):
            return place
    return None


def _v2_place(own: Path) -> CgroupPlace | None:
    # A delegated subtree: the controllers are enabled for the children of a folder we may
    # write. Our own folder holds processes (ours), so it can only be such a parent at the
    # root; otherwise the runs' cgroups go beside ours, under our parent.
    for parent in (own, own.parent):
        try:
            enabled = (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            continue
        if {"memory", "pids"} <= set(enabled) and os.access(parent, os.W_OK):
            return CgroupPlace(2, parent, parent)
    return None


class RunLimits:
    """One process tree's limits: made before it starts, joined by its first process before
    that executes anything (`enter`, run in the child), read after it ends (`reached`)."""

    def __init__(self, limits: Limits, place: CgroupPlace | None):
        self.limits = limits
        self.place = place
        self.folders: list[Path] = []
        self._procs: list[bytes] = []
        self._running = 0

    def __enter__(self) -> RunLimits:
        if self.place is not None:
            try:
                self._make_cgroups()
            except OSError:
                self.remove()
                self.place = None  # the host refused: rlimits then, and run.json says so
        self._running = 0 if self._procs else tasks_of_user(os.getuid())
        return self

    def __exit__(self, *_exc) -> None:
        self.remove()

    def _make_cgroups(self) -> None:
        name = CGROUP_PREFIX + secrets.token_hex(6)
        if self.place.version == 2:
            folder = self.place.memory / name
            folder.mkdir()
            self.folders = [folder]
            (folder / "memory.max").write_text(str(self.limits.memory))
            with contextlib.suppress(OSError):  # no swap configured: nothing to cap
                (folder / "memory.swap.max").write_text("0")
            (folder / "pids.max").write_text(str(self.limits.processes))
        else:
            memory, pids = self.place.memory / name, self.place.pids / name
            memory.mkdir()
            self.folders = [memory]
            pids.mkdir()
            self.folders.append(pids)
            (memory / "memory.limit_in_bytes").write_text(str(self.limits.memory))
            with contextlib.suppress(OSError):
                (memory / "memory.memsw.limit_in_bytes").write_text(str(self.limits.memory))
            (pids / "pids.max").write_text(str(self.limits.processes))
        self._procs = [str(folder / "cgroup.procs").encode() for folder in self.folders]

    def enter(self) -> None:
        """In the child, between fork and exec: join the run's cgroups, or take the rlimits
        that stand in for them. Nothing here may allocate much or take a lock."""
        pid = str(os.getpid()).encode()
        for procs in self._procs:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        for which, value in self.rlimits():
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(which, (value, value))

    def rlimits(self) -> list[tuple[int, int]]:
        found = [(resource.RLIMIT_FSIZE, self.limits.disk)]
        if not self._procs:
            found += [
                (resource.RLIMIT_DATA, self.limits.memory),
                # RLIMIT_NPROC counts every process of the user on the machine, not only the
                # run's: the run gets its limit on top of what the user already runs.
                (resource.RLIMIT_NPROC, self.limits.processes + self._running),
            ]
        return found

    def enforcement(self) -> dict[str, str]:
        """How each limit is enforced, for run.json."""
        if self._procs:
            where = f"cgroup v{self.place.version}"
            memory = (
                f"{where} ({'memory.max' if self.place.version == 2 else 'memory.limit_in_bytes'})"
            )
            processes = f"{where} (pids.max)"
        else:
            memory = "rlimit RLIMIT_DATA, per process (no cgroup could be made here)"
            processes = "rlimit RLIMIT_NPROC, over what the user already ran (no cgroup here" + (
                ": root is exempt, so it is not enforced)" if os.geteuid() == 0 else ")"
            )
        return {"memory": memory, "processes": processes}

    def reached(self) -> list[str]:
        """The limits the kernel enforced during the run (it killed for memory, refused a
        process). Empty under rlimits: the kernel keeps no count of those refusals."""
        if not self._procs:
            return []
        reached = []
        if self.place.version == 2:
            events = _counts(self.folders[0] / "memory.events")
            pids = _counts(self.folders[0] / "pids.events")
        else:
            events = _counts(self.folders[0] / "memory.oom_control")
            pids = _counts(self.folders[1] / "pids.events")
        if events.get("oom_kill", 0) > 0:
            reached.append("memory")
        if pids.get("max", 0) > 0:
            reached.append("processes")
        return reached

    def remove(self) -> None:
        """Remove the run's cgroups once its processes are gone (ending any straggler)."""
        for folder in reversed(self.folders):
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    _end_members(folder)
                    time.sleep(0.02)
        self.folders = []


def tasks_of_user(uid: int) -> int:
    """How many processes and threads the user runs now (what RLIMIT_NPROC counts)."""
    count = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = dict(
                line.split(":", 1) for line in status.read_text().splitlines() if ":" in line
            )
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
    return count


def _counts(path: Path) -> dict[str, int]:
    counts = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                counts[key] = int(value)
    return counts


def _end_members(folder: Path) -> None:
    with contextlib.suppress(OSError):
        for pid in (folder / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                os.kill(int(pid), 9)


def enforcement_here() -> str:
    """How this machine would enforce a run's limits, said for a person (`agentab check`)."""
    place = cgroup_place()
    memory = (
        f"memory and processes by a cgroup v{place.version} per run"
        if place is not None
        else "memory and processes by rlimits only (no cgroup can be made here)"
    )
    disk = (
        "disk by a tmpfs per run"
        if os.geteuid() == 0
        else "disk by a tmpfs for /tmp and a cap per file (the clone is on this disk: not root)"
    )
    return f"{memory}; {disk}"


# --------------------------------------------------------------------------- disk


class DiskSpace:
    """A folder whose contents can never pass `size` bytes: a tmpfs agentab mounts on it where
    it may (root), else a plain folder (and the sandbox's /tmp and RLIMIT_FSIZE stand in)."""

    def __init__(self, folder: Path, size: int):
        self.folder = Path(folder)
        self.size = size
        self.mounted = False

    def __enter__(self) -> DiskSpace:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.mounted = _mount_tmpfs(self.folder, self.size)
        return self

    def __exit__(self, *_exc) -> None:
        if self.mounted:
            unmount(self.folder)
            self.mounted = False

    def full(self) -> bool:
        """Whether the run filled it (checked when the run has ended, before it is read)."""
        if not self.mounted:
            return False
        stat = os.statvfs(self.folder)
        return stat.f_bavail * stat.f_frsize < min(FULL_MARGIN, self.size // 100)

    def enforcement(self) -> str:
        if self.mounted:
            return "a tmpfs of that size holds the clone, HOME and /tmp"
        return (
            "RLIMIT_FSIZE for any one file, and a tmpfs of that size for /tmp; the clone and "
            "HOME are on the host's disk (mounting a capped filesystem needs root)"
        )


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mount_tmpfs(folder: Path, size: int) -> bool:
    if os.geteuid() != 0:
        return False
    options = f"size={size},mode=0755".encode()
    done = _libc().mount(b"tmpfs", str(folder).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options)
    return done == 0


def unmount(folder: Path) -> None:
    """Detach a run's tmpfs (lazily: a process that still holds it cannot keep it mounted)."""
    _libc().umount2(str(folder).encode(), MNT_DETACH)


def is_mount_point(folder: Path) -> bool:
    try:
        return os.path.ismount(folder)
    except OSError:
        return False


def unmount_under(folder: Path) -> None:
    """Detach the mounts in a folder about to be removed (a run's capped space): rmtree stops
    at a mount point, and a stale mount would hold its memory until the machine restarts."""
    with contextlib.suppress(OSError):
        for child in [folder, *Path(folder).iterdir()]:
            if is_mount_point(child):
                unmount(child)
