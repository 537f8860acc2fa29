"""Where one run (or one validator) works: a folder of random name under the work folder.

A run's folder holds its clone, its scratch (the harness's config dir, HOME), its /tmp, its
copies of the bricks and the controlled git directory of its clone (`etalon/tree.py`). What the
run can write (clone, scratch, /tmp) sits in one space capped at the scenario's disk limit
(`confinement.limits.DiskSpace`); the rest is agentab's and stays out of it.

A step killed (kill -9, a node lost) cannot clean up after itself: each folder names the process
that owns it (`owner.json`), and the workflow's start removes the folders whose owner is gone,
unmounting what was mounted in them. Nothing is left under `.agentab/work/` forever.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agentab.confinement.limits import DiskSpace, unmount_under
from agentab.run.process import process_start_ticks

OWNER = "owner.json"
SPACE = "space"
# Longer than any claim takes (a mkdir and a small write): an empty folder younger than this may
# be a claim in progress.
CLAIM_GRACE_S = 60.0


@dataclass(frozen=True)
class Workspace:
    """One run's folders. `tmp` is the host folder bound at the agent's /tmp, or None for a
    private tmpfs of bwrap's own (where agentab may not mount one)."""

    folder: Path
    clone: Path
    scratch: Path
    tmp: Path | None
    bricks: Path
    space: DiskSpace


def claim(folder: Path) -> None:
    """Name this process as the folder's owner: a later start removes it once the owner is
    gone (and only then: the owner's pid and start time, so a reused pid is no owner). The
    record is written whole or not at all; a folder killed before it has one stays empty."""
    folder.mkdir(parents=True, exist_ok=True)
    owner = os.getpid()
    record = {"host": os.uname().nodename, "pid": owner, "start": process_start_ticks(owner)}
    partial = folder / f".{OWNER}.partial"
    partial.write_text(json.dumps(record) + "\n")
    partial.replace(folder / OWNER)


def owner_gone(folder: Path) -> bool:
    """Whether the folder's owner has ended. Only a process of this machine can be told gone:
    on a cluster, the work folder may be shared with nodes whose processes are not seen here."""
    try:
        record = json.loads((folder / OWNER).read_text())
        if record["host"] != os.uname().nodename:
            return False
        return process_start_ticks(int(record["pid"])) != record["start"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def remove_folder(folder: Path) -> None:
    """Remove a run's folder: its mounts detached first (rmtree would stop at them)."""
    unmount_under(Path(folder))
    shutil.rmtree(folder, ignore_errors=True)


def sweep_abandoned(work_root: Path, now: float | None = None) -> list[Path]:
    """Remove every folder under `work_root` whose owner, a process of this machine, is gone;
    return them. A folder with no owner record is left alone (not ours to judge), unless it
    holds nothing but a claim cut short and is older than a claim takes (`CLAIM_GRACE_S`): a
    step killed between making its folder and naming itself in it."""
    removed = []
    now = time.time() if now is None else now
    with contextlib.suppress(OSError):
        for folder in Path(work_root).iterdir():
            if folder.is_dir() and (owner_gone(folder) or claim_cut_short(folder, now)):
                remove_folder(folder)
                removed.append(folder)
    return removed


def claim_cut_short(folder: Path, now: float) -> bool:
    """A folder with no owner record and nothing in it but a partial one, made a while ago."""
    try:
        names = {path.name for path in folder.iterdir()}
        old = now - folder.stat().st_mtime > CLAIM_GRACE_S
    except OSError:
        return False
    return old and OWNER not in names and names <= {f".{OWNER}.partial"}


@contextlib.contextmanager
def run_workspace(work_root: Path, repository: str, disk: int) -> Iterator[Workspace]:
    """A new folder of random name for one attempt of one run, claimed, its writable part
    capped at `disk` bytes; removed (unmounted first) when the attempt ends, however it ends."""
    folder = Path(work_root).absolute() / secrets.token_hex(10)
    claim(folder)
    try:
        with DiskSpace(folder / SPACE, disk) as space:
            tmp = space.folder / "tmp" if space.mounted else None
            if tmp is not None:
                tmp.mkdir()
                tmp.chmod(0o1777)
            yield Workspace(
                folder=folder,
                clone=space.folder / repository,
                scratch=space.folder / "agent",
                tmp=tmp,
                bricks=folder / "bricks",
                space=space,
            )
    finally:
        remove_folder(folder)


@contextlib.contextmanager
def given_clone_workspace(clone: Path, run_folder: Path) -> Iterator[Workspace]:
    """A person running the step by hand names the clone (`--clone`): the scratch and the
    bricks' copies then sit in a folder of this attempt's beside the run's files, and nothing is
    mounted (the clone is the person's)."""
    folder = Path(run_folder).absolute() / f".attempt-{os.getpid()}"
    claim(folder)
    try:
        yield Workspace(
            folder=folder,
            clone=Path(clone).absolute(),
            scratch=folder / "agent",
            tmp=None,
            bricks=folder / "bricks",
            space=DiskSpace(folder / SPACE, 0),
        )
    finally:
        remove_folder(folder)
