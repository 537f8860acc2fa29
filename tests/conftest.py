"""Fixtures shared by the unit and end-to-end tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def make_git_repo(
    path: Path, files: dict[str, str], tag: str = "v1.0", branch: str = "main"
) -> str:
    """A small repository with one commit, tagged; returns the commit's SHA."""
    path.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=path, env=env, check=True, capture_output=True, text=True
        ).stdout

    git("init", "-q", "-b", branch)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git("add", "-A")
    git("commit", "-qm", "etalon")
    if tag:
        git("tag", tag)
    return git("rev-parse", "HEAD").strip()


@pytest.fixture
def calc_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "calc"
    make_git_repo(
        repo,
        {
            "calc.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
            "test_calc.py": "import unittest\n",
        },
    )
    return repo
