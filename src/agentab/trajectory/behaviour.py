"""How a run behaved, from its trajectory: built-in measures every run has, whatever its harness.

Each tool call is put in one class, in this order:

- `tests`: a shell command that runs the tests (`tests_pattern`: by default the runner of the
  scenario's `tests` validator: `pytest`, `python -m pytest`; with `unittest`, `python -m
  unittest` too, and pytest, which runs unittest's tests);
- `search`: a search tool (pi's `grep`, `find`, `ls`; Claude Code's `Grep`, `Glob`, `LS`;
  Gemini CLI's `search_file_content`, `grep_search`, `glob`, `list_directory`; a web search)
  or a shell command whose program searches (`grep`, `rg`, `find`, `ls`, `git grep`, …);
- `read`: a read tool (the transcript's kind `read`) or a shell command that prints a file
  (`cat`, `head`, `tail`, `sed -n`, `nl`, …, not `cat > a.py`: Codex reads through its shell);
- `edit`: an edit or a write (kinds `edit` and `write`; Codex's `file_change`);
- `shell`: any other shell command;
- `other`: any other tool.

A shell command is read segment by segment (split at `&&`, `||`, `;`, `|`, `&` and new lines),
each through the words that only start another (`timeout 60`, `env A=1`, `uv run`; `python -m
X` is read as `X`): it runs the tests when one segment does, else it searches when one does,
else it reads when one prints a file.

The measures, flat in measures.json's `builtin` (any of them may be named in
`[validation].metrics`): `calls_<class>` for each class, `tests_ran` (a test command was run),
`files_read` and `files_edited` (distinct files, however the calls named them), `repeated_calls`
(calls identical to an earlier one: same tool, same arguments), `turns_before_edit` (assistant
turns before the first edit; every turn when it never edited) and `tokens_per_turn` (run.json's
tokens, input with cache reads and writes plus output, over its turns). Failed calls are the
built-in `tool_errors`.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex

from agentab.trajectory.calls import calls_in, turns_in
from agentab.trajectory.transcript import arguments, count, text

CLASSES = ("read", "edit", "search", "tests", "shell", "other")

# The commands that run each test runner, as the start of a segment once its wrappers are read
# (`python -m pytest -q` is read as `pytest -q`).
RUNNER_COMMANDS = {
    "pytest": r"(pytest|py\.test)\b",
    "unittest": r"(unittest|pytest|py\.test)\b",  # pytest runs unittest's tests too
}
SEARCH_TOOLS = {
    "grep", "find", "ls", "glob", "Grep", "Glob", "LS",
    "search_file_content", "grep_search", "list_directory", "web_search", "google_web_search",
}  # fmt: skip
READ_TOOLS = {"read_many_files", "NotebookRead"}
EDIT_TOOLS = {"MultiEdit", "NotebookEdit", "file_change"}
SEARCH_PROGRAMS = {
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "find",
    "fd",
    "ls",
    "tree",
    "locate",
}
READ_PROGRAMS = {"cat", "head", "tail", "less", "more", "nl", "bat", "tac"}
WRAPPERS = {"env", "nice", "nohup", "time", "command", "exec", "xvfb-run"}
RUNS = {"uv", "poetry", "pipenv", "hatch", "pdm", "rye"}  # `uv run X` runs X
PYTHON = re.compile(r"python[\d.]*$")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
PATH_KEYS = ("path", "file_path", "absolute_path", "filePath", "file", "notebook_path")
WORKING_DIRECTORY = "/workspace"  # the agent's cwd in its sandbox (agentab.confinement.views)


def tests_pattern(runners: list[str]) -> str:
    """The pattern of a test command, from the runners of the scenario's `tests` validators
    (every runner agentab knows when it has none), when the scenario does not set its own
    (`[validation] test_command`)."""
    known = [RUNNER_COMMANDS[name] for name in runners if name in RUNNER_COMMANDS]
    return "|".join(dict.fromkeys(known or RUNNER_COMMANDS.values()))


def pattern_problem(pattern: str) -> str:
    """Why a scenario's `test_command` is no pattern ("" when it is one)."""
    try:
        re.compile(pattern)
    except re.error as error:
        return f"is not a regular expression ({error})"
    return ""


def behaviour_measures(document: dict | None, record: dict, pattern: str) -> dict:
    """The behaviour measures of one run from its trajectory (`document`, ATIF) and run.json
    `record`; `pattern`: what starts a test command (`tests_pattern`)."""
    runs_tests = re.compile(pattern)
    calls = dict.fromkeys(CLASSES, 0)
    read, edited, seen = set(), set(), set()
    repeated, first_edit = 0, None
    for made in calls_in(document):
        kind, paths = call_class(made.call, runs_tests)
        calls[kind] += 1
        (read if kind == "read" else edited if kind == "edit" else set()).update(paths)
        if kind == "edit" and first_edit is None:
            first_edit = made.turn - 1
        key = json.dumps([made.call["tool"], made.call["input"]], sort_keys=True, default=str)
        repeated += key in seen
        seen.add(key)
    turns = turns_in(document)
    return {
        **{f"calls_{kind}": calls[kind] for kind in CLASSES},
        "tests_ran": calls["tests"] > 0,
        "files_read": len(read),
        "files_edited": len(edited),
        "repeated_calls": repeated,
        "turns_before_edit": turns if first_edit is None else first_edit,
        "tokens_per_turn": tokens_per_turn(record),
    }


def call_class(call: dict, runs_tests: re.Pattern) -> tuple[str, list[str]]:
    """The class of one call and the paths it read or edited."""
    kind, tool, given = text(call.get("kind")), text(call.get("tool")), arguments(call)
    if kind == "run":
        command = call.get("command")
        return command_class(command if isinstance(command, str) else "", runs_tests)
    if kind in ("edit", "write") or tool in EDIT_TOOLS:
        return "edit", tool_paths(given)
    if kind == "read" or tool in READ_TOOLS:
        return "read", tool_paths(given)
    if tool in SEARCH_TOOLS:
        return "search", []
    return "other", []


def command_class(command: str, runs_tests: re.Pattern) -> tuple[str, list[str]]:
    classes = [segment_class(words, runs_tests) for words in segments(command)]
    for kind in ("tests", "search", "read"):
        found = [paths for each, paths in classes if each == kind]
        if found:
            return kind, [path for paths in found for path in paths]
    return "shell", []


def segment_class(words: list[str], runs_tests: re.Pattern) -> tuple[str, list[str]]:
    if runs_tests.match(" ".join(words)):
        return "tests", []
    program = posixpath.basename(words[0])
    if program in SEARCH_PROGRAMS or words[:2] in (["git", "grep"], ["git", "ls-files"]):
        return "search", []
    if any(">" in word for word in words):  # `cat > a.py <<EOF` writes
        return "other", []
    if program in READ_PROGRAMS or program == "sed" and "-n" in words[1:]:
        # Options and counts are not files (`head -n 20 a.py`), nor is sed's script.
        named = [word for word in words[1:] if not word.startswith("-") and not word.isdigit()]
        return "read", [one_path(word) for word in named[program == "sed" :]]
    return "other", []


def segments(command: str) -> list[list[str]]:
    """The simple commands of a shell command, each as its words, wrappers read through."""
    found = []
    for line in command.splitlines():
        current: list[str] = []
        for word in [*words_of(line), ";"]:
            if set(word) <= set(";&|"):  # `&&`, `||`, `;`, `|`, `&`
                if current := unwrapped(current):
                    found.append(current)
                current = []
            else:
                current.append(word)
    return found


def words_of(line: str) -> list[str]:
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = ""
        return [word for word in lexer if word]
    except ValueError:  # an unclosed quote: read by whitespace
        return line.split()


def unwrapped(words: list[str]) -> list[str]:
    """The words of the command a simple command runs: `timeout 60 uv run python -m pytest -q`
    -> `pytest -q`."""
    while words:
        program = posixpath.basename(words[0])
        if ASSIGNMENT.match(words[0]) or program in WRAPPERS:
            words = words[1:]
        elif program == "timeout" or (program in RUNS and words[1:2] == ["run"]):
            words = words[2:]  # `timeout 60 X`, `uv run X`
        elif PYTHON.match(program) and "-m" in words[1:] and words.index("-m") + 1 < len(words):
            words = words[words.index("-m") + 1 :]
        else:
            return words
    return words


def tool_paths(given: dict) -> list[str]:
    """The files a read or edit tool named: its path argument, Gemini CLI's `paths`, Codex's
    `changes`, each as `one_path`."""
    found = [given[key] for key in PATH_KEYS if isinstance(given.get(key), str)]
    if isinstance(given.get("paths"), list):
        found += [path for path in given["paths"] if isinstance(path, str)]
    if isinstance(given.get("changes"), list):
        found += [
            change["path"]
            for change in given["changes"]
            if isinstance(change, dict) and isinstance(change.get("path"), str)
        ]
    return [one_path(path) for path in found if path]


def one_path(path: str) -> str:
    """A path as one file, however the call named it: `a.py`, `./a.py` and Claude Code's
    `/workspace/a.py` are the same file of the agent's working directory."""
    return posixpath.normpath(posixpath.join(WORKING_DIRECTORY, path))


def tokens_per_turn(record: dict) -> float | None:
    """run.json's tokens (input, cache reads and writes, output) over its turns; null when it
    states no tokens or no turn."""
    facts = record.get("facts") if isinstance(record.get("facts"), dict) else {}
    tokens = facts.get("tokens") if isinstance(facts.get("tokens"), dict) else {}
    stated = [count(tokens.get(key)) for key in ("input", "cache_read", "cache_write", "output")]
    turns = count(facts.get("turns"))
    if not turns or all(value is None for value in stated):
        return None
    return round(sum(value or 0 for value in stated) / turns, 1)
