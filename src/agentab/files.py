"""Small file helpers shared by the steps: an exclusive lock, an atomic JSON write."""

from __future__ import annotations

import fcntl
import json
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


def write_json(data: dict, path: Path) -> None:
    """Write atomically: a killed job leaves the old file or none, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(path)


def write_jsonl(lines: list[dict], path: Path) -> None:
    """One JSON object a line, written atomically."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
