"""The miner's own copy of the repository: where it tags each candidate's parent, and what it
writes for a task (its hidden tests, its fix as a patch, the bundle the scenario clones).

The user's repository is only read: it is cloned bare into the output folder's `.mining/`,
and every tag (`mined/<task>`, at the commit before the fix) is made there. The bundle holds
the kept tags and what they reach, nothing after them; a run's clone then holds its own tag
and its past only (`etalon/repository.py`), so neither the fix nor its tests reach the agent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.etalon.repository import git
from agentab.mining.history import Commit, is_test

TAG_PREFIX = "mined/"
WORK = ".mining"
BUNDLE = "mined.bundle"


class MiningRepo:
    """A bare copy of the user's repository, in `<out>/.mining/`, for this mining alone."""

    def __init__(self, out: Path):
        self.out = Path(out).absolute()
        self.work = self.out / WORK
        self.bare = self.work / "repo.git"
        self.mirrors = self.work / "mirrors"

    def copy_from(self, source: str) -> None:
        """A fresh bare clone: a tag an earlier mining made is never taken for the user's."""
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        try:
            git("clone", "--bare", "--quiet", "--no-hardlinks", source, str(self.bare))
        except AgentabError as error:
            raise AgentabError(
                problem(
                    source,
                    "REPO",
                    f"is not a git repository git can read ({error})",
                    "give a git repository: a folder with its .git, a bundle or a URL",
                )  # fmt: skip
            ) from None

    @property
    def location(self) -> str:
        return str(self.bare)

    def tag(self, name: str, sha: str) -> str:
        tag = f"{TAG_PREFIX}{name}"
        git("tag", "--force", tag, sha, cwd=self.bare)
        return tag

    def file_at(self, sha: str, path: str) -> bytes:
        return git_bytes(self.bare, "cat-file", "blob", f"{sha}:{path}")

    def write_hidden(self, commit: Commit, folder: Path) -> list[str]:
        """The commit's test files as it has them, laid out at their repository paths."""
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        written = []
        for path in commit.test_files():
            target = folder / path  # git never names a path with `..` in it
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.file_at(commit.sha, path))
            written.append(path)
        return written

    def write_fix(self, commit: Commit, patch: Path) -> list[str]:
        """The commit's change outside its tests, as a patch on its parent: what a run that
        fixed the bug as the commit did would hand the validator."""
        fixed = [path for _, path in commit.changed if not is_test(path)]
        patch.parent.mkdir(parents=True, exist_ok=True)
        patch.write_bytes(
            git_bytes(self.bare, "diff", "--binary", "--no-renames", commit.parent, commit.sha,
                      "--", *fixed)
        )  # fmt: skip
        return fixed

    def bundle(self, tags: list[str], dest: Path) -> None:
        """A bundle of the kept tags and their past: what the scenario's `[etalon] repo` is."""
        dest.unlink(missing_ok=True)
        git("bundle", "create", "--quiet", str(dest), *[f"refs/tags/{tag}" for tag in tags],
            cwd=self.bare)  # fmt: skip


def git_bytes(repo: Path, *args: str) -> bytes:
    """git's output as bytes: a file or a patch is not always text."""
    import subprocess

    from agentab.etalon.repository import git_env

    result = subprocess.run(
        ["git", *args], cwd=repo, env=git_env(), stdin=subprocess.DEVNULL, capture_output=True
    )
    if result.returncode != 0:
        raise AgentabError(f"git {' '.join(args)} failed: {result.stderr.decode().strip()}")
    return result.stdout
