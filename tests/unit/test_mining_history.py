"""The history a mining walks: a `--since` off the walked line is refused with the range it
would walk, and without `--suite` the whole suite is what the runner finds in the tree."""

from __future__ import annotations

import pytest

from agentab.errors import AgentabError
from agentab.mining.history import suite_files
from agentab.mining.mine import Request, walked_commits
from agentab.mining.workspace import MiningRepo
from tests.mined_history import commit, git


@pytest.fixture
def branched(tmp_path):
    """main: start, then three fixes; `release-1.0` tags a commit of a branch off start."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "Start", {"shop.py": "x = 1\n", "tests/test_shop.py": "def test_x(): pass\n"})
    git(repo, "tag", "v1")
    git(repo, "checkout", "-q", "-b", "release")
    commit(repo, "Backport", {"shop.py": "x = 2\n"})
    git(repo, "tag", "release-1.0")
    git(repo, "checkout", "-q", "main")
    for number in range(3):
        commit(repo, f"Fix {number}", {"shop.py": f"x = {number + 3}\n"})
    mining = MiningRepo(tmp_path / "out")
    mining.copy_from(str(repo))
    return mining


def test_a_since_that_is_an_ancestor_walks_the_commits_after_it(branched):
    found = walked_commits(branched, Request(source="", since="v1"))
    assert [c.subject for c in found] == ["Fix 0", "Fix 1", "Fix 2"]


def test_a_since_off_the_walked_line_is_refused_with_the_range_it_would_walk(branched):
    with pytest.raises(AgentabError) as raised:
        walked_commits(branched, Request(source="", since="release-1.0"))
    said = str(raised.value)
    assert "--since" in said and "`release-1.0`" in said
    assert "is not an ancestor of --until `HEAD`" in said
    assert "the range release-1.0..HEAD would walk 3 commits" in said
    base = git(branched.bare, "rev-parse", "v1").strip()
    assert f"part at {base[:12]}" in said and f"--since {base[:12]}" in said


def test_the_whole_suite_is_every_file_the_runner_finds_outside_skipped_folders(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    files = [
        "tests/test_a.py", "tests/b_test.py", "tests/testing_c.py", "tests/helpers.py",
        "pkg/test_d.py", "node_modules/x/test_e.py", ".tox/test_f.py", "build/test_g.py",
        "tests/test_h.txt",
    ]  # fmt: skip
    commit(repo, "Start", dict.fromkeys(files, "\n"))
    sha = git(repo, "rev-parse", "HEAD").strip()
    assert sorted(suite_files(repo, sha, "pytest")) == [
        "pkg/test_d.py", "tests/b_test.py", "tests/test_a.py",
    ]  # fmt: skip
    assert sorted(suite_files(repo, sha, "unittest")) == [
        "pkg/test_d.py", "tests/test_a.py", "tests/testing_c.py",
    ]  # fmt: skip
