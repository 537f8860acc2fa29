"""A policy's file steps played on the etalon's tree, before any run: what would fail in every run.

The offline model answers with the policy's steps as tool calls; the harness then reads and edits
the agent's clone. An edit whose `old` text is found twice, or not at all, fails at run time
(pi: `Found 2 occurrences of the text`), and a step on a file the tree lacks fails the same way:
every run of the policy measures a failed tool call its author never meant, and the synthesis
blames the environment. So the steps are played here, in order, on the tag's files: a read needs
its file, an edit needs its file and its `old` text exactly once in it as earlier steps left it,
a write makes its file. A step that may or may not happen (`chance`, `when`) plays both ways, and
its `otherwise` alternative too; a later step is checked against every way the earlier ones
could have gone.

Only the files are played: a command (`run`) may change them too, which no check can know, and a
step that names a tool directly is the test of one harness.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass

WORKSPACE = "/workspace/"  # the clone as the agent sees it: a path under it is the clone's
MAX_WAYS = 64  # ways the earlier steps may have gone, kept at most (policies have a few)
SHOWN_CHARS = 60


@dataclass(frozen=True)
class EditProblem:
    """A step that would fail on the tree: its key in the policy file, what, and the fix."""

    key: str  # steps[N] or steps[N].otherwise
    message: str
    fix: str


@dataclass(frozen=True)
class FileState:
    """A file as the earlier steps left it: its text (None: absent), and which steps changed
    it (empty: as the tag has it)."""

    text: str | None
    changed_by: tuple[str, ...] = ()


Tree = Callable[[str], str | None]  # a tree-relative path -> the tag's text of it, or None


def edit_problems(steps: list, tree: Tree) -> list[EditProblem]:
    """Every step of `steps` (a policy's) that would fail on `tree`, once each, in order."""
    ways: list[dict[str, FileState]] = [{}]
    found: list[EditProblem] = []
    writers: dict[str, list[str]] = {}  # path -> the earlier steps that may write it
    for number, step in enumerate(steps, start=1):
        if not isinstance(step, dict) or "tool" in step:
            continue
        alternatives = step_alternatives(step, number)
        following = []
        for way in ways:
            for key, action in alternatives:
                files = dict(way)
                for problem in play(action, key, files, tree, writers):
                    if problem not in found:
                        found.append(problem)
                if files not in following:
                    following.append(files)
        for path, key in written_paths(alternatives):
            writers.setdefault(path, []).append(step_name(key))
        ways = following[:MAX_WAYS]
    return found


def step_alternatives(step: dict, number: int) -> list[tuple[str, dict | None]]:
    """(key, action) for each way the step may go: it happens, or its `otherwise` does, or
    nothing (None) when it may not happen and has no alternative."""
    chances = [chance_of(step)] + [
        chance_of(w) for w in step.get("when") or [] if isinstance(w, dict)
    ]
    ways: list[tuple[str, dict | None]] = []
    if any(chance > 0 for chance in chances):
        ways.append((f"steps[{number}]", step))
    if any(chance < 1 for chance in chances):
        otherwise = step.get("otherwise")
        if isinstance(otherwise, dict) and "tool" not in otherwise:
            ways.append((f"steps[{number}].otherwise", otherwise))
        else:
            ways.append((f"steps[{number}]", None))
    return ways


def written_paths(alternatives) -> list[tuple[str, str]]:
    """(path, key) of each alternative of a step that writes a file."""
    found = []
    for key, action in alternatives:
        if action is not None and action.get("action") == "write":
            path = clone_path(str(action.get("path") or ""))
            if path is not None:
                found.append((path, key))
    return found


def chance_of(table: dict) -> float:
    try:
        return float(table.get("chance", 1.0))
    except (TypeError, ValueError):
        return 1.0


def play(action: dict | None, key: str, files: dict[str, FileState], tree: Tree, writers=None):
    """Check one action against the files as they are; change them as it would. `writers`:
    the earlier steps that may write each path (to say when a file is missing)."""
    if action is None or action.get("action") not in ("read", "edit", "write"):
        return
    path = clone_path(str(action.get("path") or ""))
    if path is None:
        return  # outside the clone, or no path at all (the policy's own load refuses that)
    current = files.get(path) or FileState(tree(path))
    what = f"{action['action']} {path}"
    if action["action"] == "write":
        files[path] = FileState(str(action.get("content", "")), (*current.changed_by, key))
        return
    if current.text is None:
        yield missing_file(key, what, path, (writers or {}).get(path, []))
        return
    if action["action"] == "edit":
        old, new = str(action.get("old", "")), str(action.get("new", ""))
        count = current.text.count(old) if old else 0
        if count != 1:
            yield unmatched_edit(key, what, path, old, count, current)
            return
        files[path] = FileState(current.text.replace(old, new, 1), (*current.changed_by, key))


def clone_path(path: str) -> str | None:
    """The path inside the clone a step names (`calc.py`, `./calc.py`, `/workspace/calc.py`);
    None for one outside it."""
    if path.startswith(WORKSPACE):
        path = path[len(WORKSPACE) :]
    if not path or path.startswith("/"):
        return None
    normal = posixpath.normpath(path)
    return None if normal == ".." or normal.startswith("../") or normal == "." else normal


def missing_file(key: str, what: str, path: str, writers: list[str]) -> EditProblem:
    if writers:
        when = f"and {' or '.join(writers)} may not happen to write it (its chance is below 1)"
        fix = f"let the step happen only after {path} is written, or write it for certain first"
    else:
        when = "and no earlier step writes it"
        fix = (
            "point the step at a file the tag has (the policy was perhaps written for another "
            f'repository; docs/harnesses.md, "Writing your own policy"), or write {path} first'
        )
    return EditProblem(
        key,
        f"{step_name(key)} ({what}): the etalon's tag has no file {path}, {when}: the "
        "harness's tool call would fail",
        fix,
    )


def unmatched_edit(
    key: str, what: str, path: str, old: str, count: int, current: FileState
) -> EditProblem:
    where = (
        f"{path} as {', '.join(step_name(k) for k in current.changed_by)} left it"
        if current.changed_by
        else f"{path} as the tag has it"
    )
    found = "is not found" if count == 0 else f"is found {count} times"
    return EditProblem(
        key,
        f"{step_name(key)} ({what}): its old text {shown(old)} {found} in {where}; an edit "
        "needs it exactly once (pi answers `Found 2 occurrences of the text`, and the call fails)",
        "quote more of the lines around the text, so that it is found once"
        if count > 1
        else "copy the old text from the file exactly (spaces and line ends included)",
    )


def step_name(key: str) -> str:
    """`step 2`, or `step 2's otherwise`, from `steps[2]` / `steps[2].otherwise`."""
    number = key.split("[", 1)[1].split("]", 1)[0]
    return f"step {number}'s otherwise" if key.endswith(".otherwise") else f"step {number}"


def shown(text: str) -> str:
    flat = " ".join(text.split())
    flat = flat if len(flat) <= SHOWN_CHARS else flat[: SHOWN_CHARS - 1] + "…"
    return repr(flat)
