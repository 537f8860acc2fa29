"""Placing harness files inside a clone, and keeping them out of the agent's work.

Most bricks are passed by explicit path and never enter the clone. A harness that can only read
a brick from the working tree gets it placed here, and every placed path is listed in the
clone's `.git/info/exclude`: otherwise `result.patch` (and every scope metric) would count our
own configuration as the agent's work.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

from agentab.errors import AgentabError


def place_in_clone(clone: Path, files: dict[str, Path]) -> list[str]:
    """Copy each source (file or folder) to its clone-relative path; return the paths placed."""
    placed = []
    for rel, source in files.items():
        target = clone / safe_relative(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        if Path(source).is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copyfile(source, target)
        placed.append(str(PurePosixPath(rel)))
    exclude_from_git(clone, placed)
    return placed


def exclude_from_git(clone: Path, paths: list[str]) -> None:
    """List paths in `.git/info/exclude`, anchored to the clone's root, each once."""
    if not paths:
        return
    exclude = clone / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    existing = exclude.read_text().splitlines() if exclude.exists() else []
    lines = [f"/{PurePosixPath(p).as_posix().strip('/')}" for p in paths]
    new = [line for line in dict.fromkeys(lines) if line not in existing]
    if new:
        with exclude.open("a") as handle:
            if existing and existing[-1] != "":
                handle.write("\n")
            handle.write("# placed by agentab: harness files, not the agent's work\n")
            handle.write("".join(f"{line}\n" for line in new))


def safe_relative(rel: str) -> Path:
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] == ".git":
        raise AgentabError(f"a brick may only be placed inside the clone, not at {rel!r}")
    return Path(*path.parts)
