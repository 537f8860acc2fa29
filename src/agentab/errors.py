"""Problems a user can fix, and the one exception that carries them; among them a full disk
and a read-only folder, said the same way wherever they are met.

Every error agentab shows a person names the file, the key and the fix. The CLI prints
an `AgentabError` and exits 2; anything else escaping to the user is a bug.
"""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file, said so that a person can fix it."""

    file: str
    key: str
    message: str
    fix: str = ""
    line: int | None = None

    def render(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        parts = [f"{where}:" if where else "", f"[{self.key}]" if self.key else "", self.message]
        text = " ".join(part for part in parts if part)
        return f"{text}\n  fix: {self.fix}" if self.fix else text

    def as_dict(self) -> dict:
        return {
            "file": self.file,
            "key": self.key,
            "line": self.line,
            "message": self.message,
            "fix": self.fix,
        }


class AgentabError(Exception):
    """An error caused by input a person can change; its text says how."""

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem(file="", key="", message=problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(problem.render() for problem in self.problems)


class ScenarioError(AgentabError):
    """A scenario that may not run: every problem found at load, reported together."""


def problem(
    file: Path | str, key: str, message: str, fix: str = "", line: int | None = None
) -> Problem:
    return Problem(file=str(file), key=key, message=message, fix=fix, line=line)


# Below this, a disk is full for our purposes: a run writes its stream, patch and logs.
LOW_SPACE_BYTES = 1024 * 1024
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)
STORAGE_FIX = (
    "point `results:` or `state:` in config/config.yaml at another folder), then run the same "
    "command again"
)


def storage_error(error: OSError, fallback: Path | str | None = None) -> AgentabError | None:
    """What a person reads when writing failed because the disk is full or the folder is
    read-only (None for any other OSError): the folder, and what to do."""
    where = Path(error.filename or fallback or ".")
    if error.errno in NO_SPACE:
        return disk_full(where)
    if error.errno in NOT_WRITABLE:
        return read_only(where)
    return None


def disk_full(where: Path) -> AgentabError:
    folder = where if where.is_dir() else where.parent
    return AgentabError(
        problem(
            where,
            "",
            f"no space left on its disk (a person must act; `df -h {folder}` shows it): a job "
            "that could not write there left no outcome, and is redone once there is space",
            f"free space on that disk (or {STORAGE_FIX}",
        )
    )


def read_only(where: Path) -> AgentabError:
    folder = where if where.is_dir() else where.parent
    return AgentabError(
        problem(
            where,
            "",
            ("this folder" if folder == where else f"its folder {folder}")
            + " cannot be written: read-only, or no permission (a person must act)",
            f"make it writable (remount it read-write, or fix its permissions; or {STORAGE_FIX}",
        )
    )


def low_on_space(folder: Path) -> bool:
    """Whether the disk of `folder` (or of its nearest existing parent) is all but full."""
    folder = Path(folder).absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder).free < LOW_SPACE_BYTES
    except OSError:
        return False


def unwritable(folder: Path) -> bool:
    """Whether nothing can be written in `folder` (or in its nearest existing parent)."""
    folder = Path(folder).absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return not os.access(folder, os.W_OK)
