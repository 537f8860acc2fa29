"""Which commits of a history can become tasks: those that change both code and tests.

A commit is read against its first parent (a merge as the change it brought to the branch),
through git's own plumbing on a bare copy of the user's repository. Its files split three
ways: tests (what a runner collects, and what lies in a test folder), code, and files that are
neither (documentation, a changelog): a commit that changes only those is neither a fix nor a
test, and a commit that changes tests alone or code alone has no failing test to hide or no
fix to make.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agentab.etalon.repository import git

# A path is a test by its name or its folder (what the validators' defaults protect).
TEST_NAMES = ("test_*.py", "*_test.py", "conftest.py")
TEST_FOLDERS = ("tests", "test")
# Neither code nor a test: what a fix commit often touches beside its fix.
PROSE_SUFFIXES = (".md", ".rst", ".txt", ".adoc")
PROSE_NAMES = ("CHANGELOG", "CHANGES", "HISTORY", "NEWS", "AUTHORS", "LICENSE")
PROSE_FOLDERS = ("docs", "doc")
FIELD, RECORD = "\x1f", "\x1e"
# The folders pytest never looks into for tests (its default `norecursedirs`).
NOT_SEARCHED = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str
    subject: str
    body: str
    changed: tuple[tuple[str, str], ...]  # (status letter, path) against the first parent

    @property
    def message(self) -> str:
        return f"{self.subject}\n\n{self.body}".strip() + "\n"

    def paths(self, kind: str) -> list[str]:
        return [path for _, path in self.changed if kind_of(path) == kind]

    def test_files(self) -> list[str]:
        """The test files the commit adds or changes (a removed one has no test to hide)."""
        return [path for status, path in self.changed if status != "D" and is_test(path)]


def is_test(path: str) -> bool:
    posix = PurePosixPath(path)
    if any(part in TEST_FOLDERS for part in posix.parts[:-1]):
        return True
    return any(posix.match(pattern) for pattern in TEST_NAMES)


def is_prose(path: str) -> bool:
    posix = PurePosixPath(path)
    stem = posix.name.split(".", 1)[0].upper()
    return (
        posix.suffix.lower() in PROSE_SUFFIXES
        or stem in PROSE_NAMES
        or (len(posix.parts) > 1 and posix.parts[0] in PROSE_FOLDERS)
    )


def kind_of(path: str) -> str:
    if is_test(path):
        return "test"
    return "prose" if is_prose(path) else "code"


def why_not_a_candidate(commit: Commit) -> str | None:
    """None for a commit that changes code and tests; else why it is no candidate."""
    tests, code = commit.test_files(), commit.paths("code")
    if tests and code:
        return None
    if code:
        return "changes no test"
    if tests:
        return "changes tests only"
    return "changes neither code nor tests"


def resolve(repo: Path, ref: str, what: str) -> str:
    """The commit a ref names in the repository, or an error that says what to give."""
    found = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo, check=False)
    if not found.strip():
        from agentab.errors import AgentabError

        raise AgentabError(
            f"{what} `{ref}` names no commit of the repository: give a tag, a branch or a SHA "
            "that `git log` shows"
        )
    return found.strip()


def check_ancestor(repo: Path, since: tuple[str, str], until: tuple[str, str]) -> None:
    """Refuse a `--since` that is not an ancestor of `--until`: git would walk every commit
    back to where their histories part, not the commits after `--since` (a tag of a release
    branch walked 277 commits of the main line)."""
    (since_ref, since_sha), (until_ref, until_sha) = since, until
    if _is_ancestor(repo, since_sha, until_sha):
        return
    walked = int(
        git("rev-list", "--first-parent", "--count", f"{since_sha}..{until_sha}", cwd=repo)
    )
    base = git("merge-base", since_sha, until_sha, cwd=repo, check=False).strip()
    parted = f"their histories part at {base[:12]}" if base else "they share no commit"
    from agentab.errors import AgentabError, problem

    raise AgentabError(
        problem(
            "agentab tasks mine",
            "--since",
            f"`{since_ref}` ({since_sha[:12]}) is not an ancestor of --until `{until_ref}` "
            f"({until_sha[:12]}): {parted}, so the range {since_ref}..{until_ref} would walk "
            f"{walked} commit{'s' * (walked != 1)} of {until_ref}'s history, not the commits after "
            f"{since_ref}",
            f"give a --since that `git tag --merged {until_ref}` or `git log {until_ref}` "
            f"lists{f', e.g. --since {base[:12]}' if base else ''}",
        )
    )


def _is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    import subprocess

    from agentab.etalon.repository import git_env

    found = subprocess.run(
        ["git", "merge-base", "--is-ancestor", ancestor, descendant],
        cwd=repo, env=git_env(), stdin=subprocess.DEVNULL, capture_output=True,
    )  # fmt: skip
    return found.returncode == 0


def suite_files(repo: Path, sha: str, runner: str) -> list[str]:
    """Every test file of the commit the runner finds by its file patterns (test_*.py for
    pytest, test*.py for unittest), outside the folders pytest never searches: the whole
    suite, what a fix must keep passing when no `--suite` narrows it."""
    from agentab.validators.tests_collect import matches_runner

    listed = git("ls-tree", "-r", "--name-only", "-z", sha, cwd=repo)
    return [
        path
        for path in listed.split("\0")
        if path.endswith(".py")
        and matches_runner(path, runner)
        and not any(
            PurePosixPath(part).match(skip)
            for part in PurePosixPath(path).parts[:-1]
            for skip in NOT_SEARCHED
        )
    ]


def commits_between(repo: Path, since: str, until: str) -> list[Commit]:
    """The commits after `since` up to `until`, along the first parent, oldest first."""
    log = git(
        "log", "--first-parent", "--reverse", "-m", "--no-renames",
        f"--format={RECORD}%H{FIELD}%P{FIELD}%s{FIELD}%b{FIELD}", "--name-status",
        f"{since}..{until}", cwd=repo,
    )  # fmt: skip
    commits = []
    for record in log.split(RECORD)[1:]:
        sha, parents, subject, body, files = record.split(FIELD, 4)
        if not parents.strip():
            continue  # a root commit has no state before it
        commits.append(
            Commit(sha, parents.split()[0], subject.strip(), body.strip(), changes(files))
        )
    return commits


def changes(name_status: str) -> tuple[tuple[str, str], ...]:
    found = []
    for line in name_status.strip().splitlines():
        status, _, path = line.partition("\t")
        if path:
            found.append((status[:1], path))
    return tuple(found)


def task_name(commit: Commit, taken: set[str]) -> str:
    """A task name a person recognises: the subject's words and the commit's short SHA."""
    words = [word for word in re.split(r"[^a-z0-9]+", commit.subject.lower()) if word]
    stem = ""
    for word in words[:5]:
        if len(stem) + len(word) + 1 > 30:
            break
        stem = f"{stem}-{word}" if stem else word
    stem = stem or (words[0][:30] if words else "commit")
    name = f"{stem}-{commit.sha[:7]}"
    while name in taken:
        name = f"{name}-x"
    taken.add(name)
    return name
