"""The etalon's paths that belong to the measurement: `[validation] protect`.

An agent that edits or adds tests passes them: a skip-all `conftest.py` scored like the real fix,
and so did a new `test_é.py` that ends the interpreter on import. In every validator's checkout,
after the run's patch and before the validator, each protected path the patch changed or
removed is restored from the tag, and each it added is removed. The agent may still edit them
in its own clone (it may need to run them), and its patch is kept whole in results/: a judge and
a person see what it tried, and `protected_edits` counts it.

Patterns are gitignore's, simplified: relative to the repository's root; `*` and `?` match
within a name, `**` any number of folders; a pattern without a `/` matches a name at any depth;
a path is protected when it, or a folder it lies in, matches.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agentab.etalon.tree import TreeGit
from agentab.files import folder_inside, write_inside

# What a Python test runner reads besides the tests it is given, protected in every scenario
# whatever its own `protect` says: its configuration (pytest's `addopts`, `-p`, `python_files`
# in any of its files), every conftest.py, what the interpreter imports before any test
# (sitecustomize, usercustomize, a .pth file), and any module its discovery would collect (a
# new `test_é.py` that ends the interpreter, claiming success, on import). pytest 9 reads
# `pytest.toml` and `.pytest.toml` before `pytest.ini`; tests/unit/test_runner_config_files.py
# asks the pinned pytest which names it reads and fails on one missing here.
RUNNER_FILES = (
    "**/conftest.py",
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
    "**/test_*.py",
    "**/*_test.py",
)
# `protect` of a scenario that writes none: the test folders of a Python project.
DEFAULT_PROTECT = ("**/tests/**", "**/test/**")

SYMLINK_MODE = "120000"
GITLINK_MODE = "160000"


@functools.lru_cache(maxsize=256)
def _pattern(glob: str) -> re.Pattern:
    """A pattern as a regular expression over a whole path. A trailing `/**` is dropped: a
    folder that matches protects what lies in it (`is_protected` asks each folder of a path)."""
    glob = glob.strip("/")
    while glob.endswith("/**"):
        glob = glob[: -len("/**")]
    if "/" not in glob and glob != "**":
        glob = f"**/{glob}"
    regex = []
    segments = glob.split("/")
    for number, segment in enumerate(segments):
        last = number == len(segments) - 1
        if segment == "**":
            regex.append(".*" if last else "(?:[^/]+/)*")
            continue
        regex.append("".join({"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c)) for c in segment))
        regex.append("" if last else "/")
    # A name may hold a newline: `.` matches it, and the end is the string's (`$` would match
    # before a last newline too).
    return re.compile("".join(regex) + r"\Z", re.DOTALL)


def effective_protect(declared: list[str] | None) -> tuple[str, ...]:
    """The paths that belong to the measurement: the scenario's `protect` (or, when it writes
    none, the test folders of a Python project), and always what a test runner reads."""
    own = DEFAULT_PROTECT if declared is None else tuple(declared)
    return tuple(dict.fromkeys([*own, *RUNNER_FILES]))


def is_protected(path: str, globs: tuple[str, ...] | list[str]) -> bool:
    """Whether a repository path, or a folder it lies in, matches one of `globs`."""
    parts = PurePosixPath(path).parts
    prefixes = ["/".join(parts[: end + 1]) for end in range(len(parts))]
    return any(_pattern(glob).match(prefix) for glob in globs for prefix in prefixes)


def protected_files(files: list[str], globs) -> list[str]:
    """The paths among `files` (those a patch touches) that are protected, in order."""
    return [path for path in files if is_protected(path, globs)] if globs else []


def glob_problem(glob: str) -> str | None:
    """Why a pattern cannot be a protected path, said for a person, or None."""
    path = PurePosixPath(glob)
    if not glob.strip() or path.is_absolute() or ".." in path.parts:
        return f"{glob!r} is not a path inside the repository"
    if path.parts and path.parts[0] == ".git":
        return f"{glob!r} is inside .git, which no patch can reach"
    return None


@dataclass
class Restored:
    """What a validator's checkout was given back: paths restored from the tag, paths the patch
    added that were removed."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def restore_protected(tree: TreeGit, globs, touched: list[str]) -> Restored:
    """In a checkout of etalon + patch: give back the tag's content at every protected path the
    patch touched (`touched`, as git listed them), and remove those it added. No link is
    followed: a patch that turned a protected folder into a link gets the folder back."""
    done = Restored()
    mine = protected_files(touched, globs)
    if not mine:
        return done
    etalon = tree.etalon_files()
    for path in sorted((p for p in mine if p not in etalon), key=len, reverse=True):
        if remove_inside(tree.tree, path):
            done.removed.append(path)
    for path in mine:
        mode = etalon.get(path)
        if mode is None or mode == GITLINK_MODE:
            continue
        restore_from_tag(tree, path, mode)
        done.restored.append(path)
    return done


def restore_from_tag(tree: TreeGit, path: str, mode: str) -> None:
    data = tree.etalon_blob(path)
    clear_the_way(tree.tree, path)
    if mode == SYMLINK_MODE:
        parent, _, name = path.rpartition("/")
        folder = folder_inside(tree.tree, parent, make=True)
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=folder)
            os.symlink(os.fsdecode(data), name, dir_fd=folder)
        finally:
            os.close(folder)
        return
    write_inside(tree.tree, path, data, mode=0o755 if mode == "100755" else 0o644)


def clear_the_way(root: Path, path: str) -> None:
    """Every folder on the way to `path` a real folder: a link or a file the patch put where the
    tag has a folder is removed (never followed), and the folder made."""
    parts = PurePosixPath(path).parts[:-1]
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts:
            try:
                info = os.stat(part, dir_fd=folder, follow_symlinks=False)
                if not stat.S_ISDIR(info.st_mode):
                    os.unlink(part, dir_fd=folder)
                    os.mkdir(part, 0o755, dir_fd=folder)
            except FileNotFoundError:
                os.mkdir(part, 0o755, dir_fd=folder)
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
    finally:
        os.close(folder)


def remove_inside(root: Path, path: str) -> bool:
    """Remove `root/path` (a file, a link, a folder) without following a link on the way;
    False when nothing was there."""
    parent, _, name = path.rpartition("/")
    try:
        folder = folder_inside(root, parent)
    except OSError:  # a folder on the way is gone or is not one: nothing of the patch's there
        return False
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        os.close(folder)
        return False
    try:
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(name, dir_fd=folder)
        else:
            os.unlink(name, dir_fd=folder)
    finally:
        os.close(folder)
    return True
