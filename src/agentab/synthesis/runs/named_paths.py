"""The files a tool call of a transcript names: what a read of a brick's file is recognised by.

A transcript is the agent's own output, so it is read as data: the paths come from the call's
arguments that hold paths (`path`, `file_path`, `dir_path`, …) and from the words of a shell
command, split as a shell splits them, never run. A command's relative paths are taken from
where its `cd` went (`cd /opt/bricks/skill && cat reference.md` names `reference.md` there),
else from the agent's working directory. A path written some other way (built by a script,
inside a `python3 -c` string) is not seen.
"""

from __future__ import annotations

import posixpath
import re
import shlex

from agentab.trajectory.behaviour import WORKING_DIRECTORY

PATH_KEY = re.compile(r"path|file|dir", re.IGNORECASE)
COMMAND_KEYS = ("command", "cmd")
SEPARATOR = re.compile(r"^[;&|()<>]+$")
LONGEST_COMMAND = 100_000  # characters of a command read: a longer one is cut there
GLOB = re.compile(r"[*?\[]")


def named_paths(call: dict, cwd: str = WORKING_DIRECTORY) -> set[str]:
    """Every absolute, normalised path a transcript call names (a glob stays a pattern)."""
    arguments = call.get("input") if isinstance(call.get("input"), dict) else {}
    found: set[str] = set()
    if call.get("kind") == "run":
        command = call.get("command")
        commands = [command] if isinstance(command, str) else []
        commands += [arguments.get(key) for key in COMMAND_KEYS]
        for text in {c for c in commands if isinstance(c, str)}:
            found |= command_paths(text, cwd)
        return found
    for key, value in arguments.items():
        if PATH_KEY.search(str(key)):
            found |= {absolute(cwd, text) for text in strings(value) if text.strip()}
    return found


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def command_paths(command: str, cwd: str = WORKING_DIRECTORY) -> set[str]:
    """The paths a shell command's words name, each word taken relative to the folder the
    command's last `cd` went to."""
    found: set[str] = set()
    after_cd = False
    for word in shell_words(command[:LONGEST_COMMAND]):
        if SEPARATOR.match(word):
            after_cd = False
            continue
        if after_cd:
            cwd, after_cd = absolute(cwd, word), False
            continue
        if word == "cd":
            after_cd = True
            continue
        for candidate in (word, word.partition("=")[2]):
            if candidate and not candidate.startswith(("-", "~", "$")):
                found.add(absolute(cwd, candidate))
    return found


def shell_words(command: str) -> list[str]:
    """Words as a POSIX shell splits them, with `;`, `&&`, `|`, … as words of their own;
    whitespace-separated words when the quotes do not balance."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return command.split()


def absolute(cwd: str, path: str) -> str:
    return posixpath.normpath(posixpath.join(cwd, path.strip()))


def is_glob(path: str) -> bool:
    return bool(GLOB.search(path))
