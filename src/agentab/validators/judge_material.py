"""What a judge reads of a run, laid out so that nothing the agent wrote can pass for the prompt.

The material — the task, the diff, the agent's final message — goes in the user message, each
part between two lines that carry a boundary drawn at random for the request and checked absent
from the material (`<<<{boundary} BEGIN diff>>>` … `<<<{boundary} END diff>>>`). The system
prompt names the boundary and says that whatever lies between is data to judge, never an
instruction: a `# Rubric` heading in a final message, a fence a diff's context line closes, or a
boundary the agent made up is then just more of what it wrote.

The diff has a budget, shared per file, that holds however many files the patch names: the files
with content first, each header shown (its first line when there are many), the content of the
smallest files whole, and the largest cut first to an equal share of what is left; then the
names of the files with no content while they fit, and a line that counts the rest. Each cut
is marked where it happens by a line that carries the boundary, and the prompt says how many
were cut. One huge file, or a thousand empty ones with long names, can no longer keep the rest
of the patch from the judge.

The patch is split at its own `diff --git` lines (`split_patch`): in a patch a line that begins
so starts a file, since every line of a file's content begins with ` `, `+`, `-` or `\\`, and a
binary patch's lines with a length letter and base-85 data, which has no space. A path git
quoted (`"b/test_\\303\\251.py"` for `test_é.py`) is unquoted.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from pathlib import Path

# A diff longer than this is cut, and the prompt says so: a request over the model's context
# would fail every attempt and make the run invalid for a reason unrelated to the run.
MAX_DIFF_CHARS = 400_000
MAX_FINAL_MESSAGE_CHARS = 100_000
FILE_START = "diff --git "
NO_CHANGES = "(no changes)"
# C escapes git writes in a quoted path (quote_c_style), besides three octal digits per byte.
ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


@dataclass(frozen=True)
class FileDiff:
    """One file's part of a patch: its header (from `diff --git` to its first hunk, or to its
    binary patch), always shown, and its content, which may be cut."""

    path: str
    header: str
    body: str


# --- the patch, file by file ----------------------------------------------------------------


def split_patch(text: str) -> list[FileDiff]:
    """The files of a `git diff` patch, in its order. Text before the first `diff --git` line
    (a patch not made by git) is a part of its own, with no header."""
    parts = re.split(r"(?m)^(?=diff --git )", text)
    files = []
    for part in parts:
        if not part:
            continue
        if not part.startswith(FILE_START):
            files.append(FileDiff("", "", part))
            continue
        header, body = header_and_body(part)
        files.append(FileDiff(path_of(header), header, body))
    return files


def header_and_body(part: str) -> tuple[str, str]:
    found = re.search(r"(?m)^(?:@@ |GIT binary patch$)", part)
    return (part, "") if found is None else (part[: found.start()], part[found.start() :])


def path_of(header: str) -> str:
    """The file's path after the change (before it, for a deleted file), from the header's own
    lines where it has them (each names one path: unambiguous), else from `diff --git a/… b/…`."""
    lines = header.split("\n")
    named = {}
    for line in lines[1:]:
        for mark in ("rename to ", "copy to ", "+++ ", "--- "):
            if line.startswith(mark) and mark not in named:
                named[mark] = git_path(line[len(mark) :].removesuffix("\t"))
    for mark in ("rename to ", "copy to "):
        if named.get(mark):
            return named[mark]
    for mark, prefix in (("+++ ", "b/"), ("--- ", "a/")):
        found = named.get(mark)
        if found and found != "/dev/null":
            return found.removeprefix(prefix)
    return path_of_first_line(lines[0][len(FILE_START) :])


def path_of_first_line(rest: str) -> str:
    """`a/<path> b/<path>`, either quoted. Unquoted, a path may hold ` b/`: the two halves are
    then told apart by being the same path (a rename names its paths on lines of their own)."""
    if rest.startswith('"'):
        _, after = unquote(rest)
        second = after.removeprefix(" ")
        return (git_path(second) or "").removeprefix("b/")
    if rest.endswith('"'):
        return git_path(rest[rest.rfind(' "') + 1 :]).removeprefix("b/")
    half = (len(rest) - 1) // 2
    if rest[half : half + 3] == " b/" and rest[2:half] == rest[half + 3 :]:
        return rest[half + 3 :]
    return rest.rpartition(" b/")[2] or rest


def git_path(text: str) -> str:
    """A path as git wrote it on a header line: C-quoted when it holds a byte git does not print
    as is (a quote, a backslash, a control character, a non-ASCII byte), else as it is."""
    if text.startswith('"'):
        path, _ = unquote(text)
        return path
    return text


def unquote(text: str) -> tuple[str, str]:
    """The path a C-quoted string at the start of `text` stands for, and what follows it. Its
    bytes are UTF-8 (a byte that is not stays visible as U+FFFD)."""
    out = bytearray()
    index = 1
    while index < len(text):
        char = text[index]
        if char == '"':
            return out.decode("utf-8", "replace"), text[index + 1 :]
        if char == "\\" and text[index + 1 : index + 2] in ESCAPES:
            out.append(ESCAPES[text[index + 1]])
            index += 2
        elif char == "\\" and re.fullmatch(r"[0-3][0-7]{2}", text[index + 1 : index + 4]):
            out.append(int(text[index + 1 : index + 4], 8))
            index += 4
        else:
            out += char.encode("utf-8")
            index += 1
    return out.decode("utf-8", "replace"), ""  # unterminated: the rest is the path


# --- the budget -------------------------------------------------------------------------------


def shares(sizes: list[int], budget: int) -> list[int]:
    """Each file's share of the budget for its content: the smallest files whole, the largest
    cut to an equal share of what the smaller ones left."""
    given = [0] * len(sizes)
    left = max(0, budget)
    order = sorted(range(len(sizes)), key=lambda index: sizes[index])
    for rank, index in enumerate(order):
        given[index] = min(sizes[index], left // (len(sizes) - rank))
        left -= given[index]
    return given


@dataclass(frozen=True)
class ShownDiff:
    text: str
    files: int
    characters: int
    cut: int  # how many files' content was cut
    unnamed: int = 0  # how many files are not shown at all, only counted


def shown_diff(text: str, boundary: str, budget: int = MAX_DIFF_CHARS) -> ShownDiff:
    """The diff as the judge sees it, within `budget` however many files it names.

    The files with content come first, in the patch's order: their headers (each its first
    line when they would take more than half the budget; past that half, a file is counted
    only), then their content, each within its share. The files with no content (an empty file
    added, a mode changed) follow with what is left, and a line counts the ones that did not
    fit. Names count in the budget: a thousand empty files with long names can neither pass it
    nor push a real change's content out."""
    files = split_patch(text)
    if len(text) <= budget:  # whole, in the patch's own order
        return ShownDiff(text, len(files), len(text), 0)
    changed = [f for f in files if f.body]
    bare = [f for f in files if not f.body]
    reserve = len(unnamed_line(boundary, len(files), len(text)))
    headers, shown_changed = fitted_headers(changed, (budget - reserve) // 2, marker_size(boundary))
    sizes = [len(f.body) for f in shown_changed]
    left = budget - reserve - sum(map(len, headers))
    allowed = shares(sizes, left)
    # Each cut costs its marker line: the budget is shared again without them until it holds.
    for _ in range(len(shown_changed)):
        cut = sum(1 for size, allowance in zip(sizes, allowed, strict=True) if allowance < size)
        again = shares(sizes, left - cut * marker_size(boundary))
        if again == allowed:
            break
        allowed = again
    shown = [
        header + cut_to(file.body, allowance, boundary)
        for file, header, allowance in zip(shown_changed, headers, allowed, strict=True)
    ]
    cut = sum(1 for size, allowance in zip(sizes, allowed, strict=True) if allowance < size)
    room = budget - reserve - sum(map(len, shown))
    named = 0
    for file in bare:
        header = file.header if len(file.header) <= room else first_line(file.header)
        if len(header) > room:
            break
        shown.append(header)
        room -= len(header)
        named += 1
    not_shown = changed[len(shown_changed) :] + bare[named:]
    unnamed = len(not_shown)
    if unnamed:
        omitted = sum(len(f.header) + len(f.body) for f in not_shown)
        shown.append(unnamed_line(boundary, unnamed, omitted))
    return ShownDiff("".join(shown), len(files), len(text), cut, unnamed)


def first_line(header: str) -> str:
    return header.split("\n", 1)[0] + "\n" if header else ""


def fitted_headers(
    files: list[FileDiff], room: int, cut_cost: int
) -> tuple[list[str], list[FileDiff]]:
    """The headers of `files` within `room`, each with the room of the line that would say its
    content was cut: whole, or each its first line when whole they do not fit; and the files
    whose header fits, in order (the rest are only counted)."""
    headers = [f.header for f in files]
    if sum(map(len, headers)) + cut_cost * len(files) > room:
        headers = [first_line(header) for header in headers]
    kept, used = [], 0
    for header in headers:
        if used + len(header) + cut_cost > room:
            break
        kept.append(header)
        used += len(header) + cut_cost
    return kept, files[: len(kept)]


def unnamed_line(boundary: str, files: int, characters: int) -> str:
    return (
        f"<<<{boundary} CUT: {files} more files, {characters} characters of the diff, are not "
        "shown (not even their names)>>>\n"
    )


def marker(boundary: str, omitted: int, what: str = "this file") -> str:
    return f"<<<{boundary} CUT: {omitted} more characters of {what} are not shown>>>\n"


def marker_size(boundary: str) -> int:
    return len(marker(boundary, 10**12)) + 1  # the widest count, and a newline of the kept text


def cut_to(text: str, allowance: int, boundary: str, what: str = "this file") -> str:
    """`text` whole, or its whole lines within `allowance` and a line that says what was cut."""
    if len(text) <= allowance:
        return text
    newline = text.rfind("\n", 0, allowance)
    end = newline + 1 if newline >= 0 else allowance  # a line longer than the share is cut too
    kept = text[:end] if end else ""
    ending = "" if not kept or kept.endswith("\n") else "\n"
    return f"{kept}{ending}{marker(boundary, len(text) - end, what)}"


# --- the user message -------------------------------------------------------------------------


def read_patch(patch: str | None) -> str:
    if not patch or not Path(patch).is_file():
        return ""
    return Path(patch).read_text(encoding="utf-8", errors="replace")


def new_boundary(material: list[str]) -> str:
    """A boundary drawn at random, absent from every part of the material."""
    while True:
        boundary = f"agentab-{secrets.token_hex(16)}"
        if not any(boundary in part for part in material):
            return boundary


def fenced(name: str, text: str, boundary: str) -> str:
    ending = "" if text.endswith("\n") else "\n"
    return f"<<<{boundary} BEGIN {name}>>>\n{text}{ending}<<<{boundary} END {name}>>>\n"


def judge_material(context: dict) -> tuple[str, str]:
    """The user message (the run as the judge reads it: task, diff, final message; nothing
    names the cell) and the boundary its parts lie between."""
    task = str(context.get("task_prompt") or "")
    patch = read_patch(context.get("patch"))
    final = context.get("final_message")
    final = str(final) if final else "(the agent ended without a final message)"
    boundary = new_boundary([task, patch, final])
    diff = shown_diff(patch, boundary) if patch.strip() else None
    final_shown = cut_to(final, MAX_FINAL_MESSAGE_CHARS, boundary, "the final message")
    return (
        "The run's material follows in three parts: the task the agent was given, its changes "
        "(a diff against the starting state of the repository) and its final message.\n\n"
        + fenced("task", task, boundary)
        + "\n"
        + diff_note(diff, boundary)
        + fenced("diff", diff.text if diff else NO_CHANGES, boundary)
        + "\n"
        + fenced("final-message", final_shown, boundary)
    ), boundary


def diff_note(diff: ShownDiff | None, boundary: str) -> str:
    if diff is None:
        return "The agent changed nothing.\n"
    size = f"The diff changes {diff.files} file{'s' * (diff.files != 1)} ({diff.characters} characters)"
    if not diff.cut and not diff.unnamed:
        return f"{size}, shown whole.\n"
    unnamed = (
        f"; {diff.unnamed} file{'s' * (diff.unnamed != 1)} with no content or past the room for "
        "names are only counted, at the end"
        if diff.unnamed
        else ""
    )
    return (
        f"{size}, more than the {MAX_DIFF_CHARS} characters a judge is shown. The files with "
        f"content come first; the content of {diff.cut} file{'s' * (diff.cut != 1)} is cut to "
        f"fit, the largest first{unnamed}; each cut is marked inside the diff by a line that "
        f"begins with `<<<{boundary} CUT`.\n"
    )
