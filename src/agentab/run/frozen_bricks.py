"""Bricks frozen with the results: each brick a cell hands its agent, copied once into
`results/<name>/bricks/<hash>/` and never changed, and every run given a copy of that copy.

The receipt compares what reached the model with the run's copy, which is the frozen one (both
are checked against the hash the scenario had when it was loaded, the hash run.json records):
a brick edited in the scenario's folder while a workflow runs is a fault for the runs that
started after, never a run "delivered" with a text nobody declared. The results folder keeps
the exact bricks its runs had, beside the frozen scenario.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
from dataclasses import replace
from pathlib import Path

from agentab.harnesses.base import HarnessFault
from agentab.scenario import content_sha256


def frozen_brick(brick, store: Path) -> Path:
    """The brick's frozen copy in `store`, made from its source on first use."""
    return freeze_once(
        Path(brick.path),
        brick.sha256,
        store,
        copy=copy_brick,
        digest=content_sha256,
        changed=f"the brick {brick.rel} changed since the scenario was loaded; the run is redone",
    )


def freeze_once(source: Path, sha256: str, store: Path, *, copy, digest, changed: str) -> Path:
    """`store/<hash>/<name>`, copied from `source` on first use and checked against the hash
    the scenario was loaded with (`changed`: the fault when it differs). Jobs racing to freeze
    the same input each copy aside and rename: the first wins, the others' bytes are the same."""
    target = store / sha256[:16] / source.name
    if target.exists():
        return target
    partial = store / f".partial-{secrets.token_hex(6)}"
    try:
        copy(source, partial / target.name)
        if digest(partial / target.name) != sha256:
            raise HarnessFault(changed)
        with contextlib.suppress(OSError):  # another job froze it first: the same bytes
            partial.rename(target.parent)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def run_copies(bricks, store: Path, folder: Path) -> tuple:
    """Each brick, from its frozen copy, copied for this run and checked against its hash: the
    harness reads, and the sandbox binds, a copy that nothing can change while the run lasts,
    under a folder that names no cell."""
    copies = []
    for index, brick in enumerate(bricks):
        copy = folder / str(index) / Path(brick.path).name
        copy_brick(frozen_brick(brick, store), copy)
        if content_sha256(copy) != brick.sha256:
            raise HarnessFault(f"the frozen copy of the brick {brick.rel} changed; it is redone")
        strip_byte_order_marks(copy)
        copies.append(replace(brick, path=copy))
    return tuple(copies)


def copy_brick(source: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, dest, symlinks=True)
    else:
        shutil.copyfile(source, dest)


BOM = b"\xef\xbb\xbf"


def strip_byte_order_marks(copy: Path) -> None:
    """A UTF-8 byte-order mark is accepted and dropped, as in the scenario file: a harness would
    hand it to the model as a stray character at the start of the brick's text."""
    for path in [copy] if copy.is_file() else sorted(copy.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if data.startswith(BOM):
                path.write_bytes(data[len(BOM) :])
