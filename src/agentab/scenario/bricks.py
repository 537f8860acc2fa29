"""Placing harness files inside a clone, and keeping them out of the agent's work.

Most bricks are passed by explicit path and never enter the clone. A harness that can only read
a brick from the working tree gets it placed here, and every placed path is listed in the
clone's `.git/info/exclude`: otherwise `result.patch` (and every scope metric) would count our
own configuration as the agent's work.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath

from agentab.errors import AgentabError
from agentab.etalon import exclude_from_git
from agentab.files import write_inside


def place_in_clone(clone: Path, files: dict[str, Path]) -> list[str]:
    """Copy each source (file or folder) to its clone-relative path; return the paths placed.

    The etalon's setup ran in the clone before (confined): a link it left where a brick goes
    must not carry agentab's write out of the clone, so no link is followed on the way."""
    placed = []
    for rel, source in files.items():
        target = clone / safe_relative(rel)
        if os.path.lexists(target) and not already_placed(clone, rel):
            raise AgentabError(
                f"a brick would overwrite `{rel}`, which the etalon holds: the agent would "
                "measure our file in place of the repository's; pass the brick another way"
            )
        for inner, file in files_of(Path(source)):
            relative = PurePosixPath(safe_relative(rel).as_posix(), inner) if inner else rel
            write_inside(clone, str(relative), file.read_bytes())
        placed.append(str(PurePosixPath(rel)))
    exclude_from_git(clone, placed)
    return placed


def files_of(source: Path) -> list[tuple[str, Path]]:
    """(path inside the brick, file) for a folder's files; ("", source) for a file."""
    if not source.is_dir():
        return [("", source)]
    return [
        (child.relative_to(source).as_posix(), child)
        for child in sorted(source.rglob("*"))
        if child.is_file()
    ]


def already_placed(clone: Path, rel: str) -> bool:
    """Whether agentab placed this path before (it is then listed in .git/info/exclude)."""
    exclude = clone / ".git" / "info" / "exclude"
    line = f"/{PurePosixPath(rel).as_posix().strip('/')}"
    return exclude.exists() and line in exclude.read_text().splitlines()


def safe_relative(rel: str) -> Path:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] == ".git":
        raise AgentabError(f"a brick may only be placed inside the clone, not at {rel!r}")
    return Path(*path.parts)


# ---------------------------------------------------------------------------- what a brick is


def content_sha256(path: Path) -> str:
    """A file's hash, or a folder's: every file's relative path and bytes, in sorted order."""
    digest = hashlib.sha256()
    if path.is_file():
        digest.update(path.read_bytes())
        return digest.hexdigest()
    for child in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(child.relative_to(path).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(child.read_bytes()).digest())
    return digest.hexdigest()


def resolved(path: Path) -> Path | None:
    """The path with its links followed, or None when they lead round in a loop."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # Python says "Symlink loop" with either, by version
        return None


def inside(path: Path, folder: Path) -> bool:
    """Whether path, symlinks followed, lies in folder (symlinks followed too)."""
    target = resolved(path)
    try:
        target.relative_to(folder.resolve())
    except (AttributeError, ValueError):
        return False
    return True


def brick_shape_problem(kind: str, path: Path, scenario_dir: Path) -> str | None:
    """Why a file cannot be a brick of this kind (a brick is what it claims), or None."""
    if kind in ("context_files", "agents") and not path.is_file():
        return f"a {KIND_WORDS[kind]} must be a regular file, and this is a folder"
    if kind == "skills":
        if not path.is_dir():
            return "a skill is a folder holding SKILL.md, and this is a file"
        if not (path / "SKILL.md").is_file():
            return "a skill is a folder holding SKILL.md, and this folder has none"
    if path.is_dir():
        for child in sorted(path.rglob("*")):
            if resolved(child) is None:
                return f"`{child.relative_to(path)}` inside it is a link that leads round in a loop"
            if not inside(child, scenario_dir):
                return (
                    f"`{child.relative_to(path)}` inside it is a link that leads out of the "
                    "scenario's folder"
                )
    return None


KIND_WORDS = {
    "context_files": "context file",
    "extensions": "extension",
    "skills": "skill",
    "agents": "agent definition",
}
