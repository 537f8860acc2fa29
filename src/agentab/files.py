"""Small file helpers shared by the steps: an exclusive lock between processes."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive_lock(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on lock_file: parallel jobs asking for one shared thing
    (a mirror, a harness install) wait while one of them makes it."""
    lock_file = Path(lock_file)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
