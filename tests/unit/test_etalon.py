"""The etalon: a fresh clone of a tag per run, its own .git, and the patch of the agent's work."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentab.etalon import (
    EtalonFault,
    TreeGit,
    checkout_with_patch,
    ensure_mirror,
    etalon_problem,
    exclude_from_git,
    fresh_clone,
    git,
    patch_files,
    pristine_checkout,
)
from tests.conftest import make_git_repo


def test_a_clone_has_its_own_gitdir_even_from_a_worktree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    sha = make_git_repo(repo, {"a.txt": "a\n"})
    worktree = tmp_path / "wt"
    git("worktree", "add", "-q", str(worktree), "v1.0", cwd=repo)
    assert (worktree / ".git").is_file()  # a worktree's .git points at a shared gitdir
    clone = tmp_path / "clone"
    assert fresh_clone(str(worktree), "v1.0", clone, tmp_path / "mirrors") == sha
    assert (clone / ".git").is_dir()
    git("commit", "-q", "--allow-empty", "-m", "agent commit", cwd=clone)
    # the agent's commit moved nothing outside its clone
    assert git("rev-parse", "HEAD", cwd=repo).strip() == sha
    assert git("remote", cwd=clone).strip() == ""


def test_the_clone_is_the_tag_not_the_working_tree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_git_repo(repo, {"a.txt": "tagged\n"})
    (repo / "a.txt").write_text("uncommitted edit\n")
    clone = tmp_path / "clone"
    fresh_clone(str(repo), "v1.0", clone, tmp_path / "mirrors")
    assert (clone / "a.txt").read_text() == "tagged\n"


def test_a_retry_starts_from_an_empty_clone(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_git_repo(repo, {"a.txt": "a\n"})
    clone = tmp_path / "clone"
    fresh_clone(str(repo), "v1.0", clone, tmp_path / "mirrors")
    (clone / "left-by-a-failed-attempt").write_text("x")
    fresh_clone(str(repo), "v1.0", clone, tmp_path / "mirrors")
    assert not (clone / "left-by-a-failed-attempt").exists()


def test_the_mirror_is_fetched_again_when_the_tag_is_missing(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_git_repo(repo, {"a.txt": "a\n"})
    mirrors = tmp_path / "mirrors"
    ensure_mirror(str(repo), "v1.0", mirrors)
    (repo / "b.txt").write_text("b\n")
    git("add", "b.txt", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b", cwd=repo)
    git("tag", "v2.0", cwd=repo)
    clone = tmp_path / "clone"
    fresh_clone(str(repo), "v2.0", clone, mirrors)
    assert (clone / "b.txt").exists()


def test_the_patch_has_untracked_and_binary_files_and_no_injected_ones(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_git_repo(repo, {"a.txt": "a\n", ".gitignore": "*.log\n"})
    clone = tmp_path / "clone"
    fresh_clone(str(repo), "v1.0", clone, tmp_path / "mirrors")
    (clone / "a.txt").write_text("changed\n")
    (clone / "new.txt").write_text("new\n")
    (clone / "blob.bin").write_bytes(bytes(range(256)))
    (clone / "AGENTS.md").write_text("injected brick\n")
    (clone / "debug.log").write_text("ignored by the etalon\n")
    exclude_from_git(clone, ["AGENTS.md"])
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "agent", cwd=clone)
    # The agent moves the tag onto its own commit: the patch is still taken against the etalon.
    git("tag", "-f", "v1.0", cwd=clone)
    made = TreeGit(clone).patch()
    patch = made.patch
    assert made.files == patch_files(patch) == ["a.txt", "blob.bin", "new.txt"]
    assert b"GIT binary patch" in patch
    patch_file = tmp_path / "result.patch"
    patch_file.write_bytes(patch)
    checkout = tmp_path / "checkout"
    checkout_with_patch(str(repo), "v1.0", patch_file, checkout, tmp_path / "mirrors")
    assert (checkout / "blob.bin").read_bytes() == bytes(range(256))
    assert (checkout / "a.txt").read_text() == "changed\n"
    assert not (checkout / "AGENTS.md").exists()


def test_a_branch_or_a_sha_is_refused_saying_which(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    sha = make_git_repo(repo, {"a.txt": "a\n"})
    assert etalon_problem(str(repo), "v1.0") is None
    assert "is a branch" in etalon_problem(str(repo), "main").text
    assert "is a commit SHA" in etalon_problem(str(repo), sha[:10]).text
    bundle = tmp_path / "repo.bundle"
    subprocess.run(
        ["git", "bundle", "create", str(bundle), "--all"], cwd=repo, check=True, capture_output=True
    )
    assert etalon_problem(str(bundle), "v1.0") is None


def test_a_clone_made_after_another_was_used_is_pristine(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    sha = make_git_repo(repo, {"a.txt": "a\n"})
    mirrors = tmp_path / "mirrors"
    used = tmp_path / "used"
    fresh_clone(str(repo), "v1.0", used, mirrors)
    (used / "a.txt").write_text("the agent's edit\n")
    (used / "new.txt").write_text("new\n")
    git("add", "-A", cwd=used)
    git("commit", "-qm", "agent", cwd=used)
    git("tag", "-f", "v1.0", cwd=used)
    clone = tmp_path / "clone"
    assert fresh_clone(str(repo), "v1.0", clone, mirrors) == sha
    assert (clone / "a.txt").read_text() == "a\n"
    assert not (clone / "new.txt").exists()
    assert git("rev-parse", "HEAD", cwd=clone).strip() == sha
    assert git("status", "--porcelain", cwd=clone) == ""
    assert git("remote", cwd=clone).strip() == ""


@pytest.mark.parametrize(
    "poison",
    [
        lambda tree: (tree / "a.txt").write_text("poisoned\n"),  # an edit, same tag
        lambda tree: (tree / "a.txt").write_text("b\n"),  # same size: only content tells
        lambda tree: (tree / "sitecustomize.py").write_text("import os\n"),  # an added file
        lambda tree: (tree / ".gitignore").write_text("*.pyc\n"),
    ],
)
def test_a_poisoned_shared_checkout_is_a_fault_and_is_made_again(tmp_path: Path, poison) -> None:
    # An unconfined agent once appended to the checkout every run is copied from: every later
    # run of every scenario started from its tree, under the same SHA.
    repo = tmp_path / "repo"
    sha = make_git_repo(repo, {"a.txt": "a\n"})
    mirrors = tmp_path / "mirrors"
    tree, _ = pristine_checkout(str(repo), "v1.0", mirrors)
    poison(tree)
    with pytest.raises(EtalonFault, match="differed from the tag"):
        fresh_clone(str(repo), "v1.0", tmp_path / "clone", mirrors)
    assert fresh_clone(str(repo), "v1.0", tmp_path / "clone", mirrors) == sha  # made again
    assert (tmp_path / "clone" / "a.txt").read_text() == "a\n"
    assert not (tmp_path / "clone" / "sitecustomize.py").exists()


def history_with_a_later_fix(repo: Path) -> dict[str, str]:
    """A bug tagged v1.0, then its fix on a branch and tagged v1.1, an annotated tag, a stash-like
    dangling blob: everything a clone of v1.0 must not hold. Returns the objects to look for."""
    make_git_repo(repo, {"calc.py": "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n"})
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    (repo / "calc.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    git(*ident, "commit", "-qam", "fix mean: THE-FIX-MESSAGE", cwd=repo)
    git(*ident, "tag", "-a", "v1.1", "-m", "the fixed release", cwd=repo)
    git("branch", "fix-branch", cwd=repo)
    fix_blob = git("rev-parse", "HEAD:calc.py", cwd=repo).strip()
    dangling = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input="DANGLING-SECRET\n",
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return {
        "fix_commit": git("rev-parse", "HEAD", cwd=repo).strip(),
        "fix_blob": fix_blob,
        "dangling": dangling,
    }


def test_a_clone_holds_the_tag_and_its_past_only(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    later = history_with_a_later_fix(repo)
    clone = tmp_path / "clone"
    sha = fresh_clone(str(repo), "v1.0", clone, tmp_path / "mirrors")
    assert git("tag", cwd=clone).split() == ["v1.0"]
    assert git("for-each-ref", "--format=%(refname)", cwd=clone).split() == ["refs/tags/v1.0"]
    assert git("log", "--all", "--format=%H", cwd=clone).split() == [sha]
    objects = git("cat-file", "--batch-all-objects", "--batch-check=%(objectname)", cwd=clone)
    for name, oid in later.items():
        assert oid not in objects, f"the {name} is readable from the clone"
        missing = subprocess.run(["git", "cat-file", "-e", oid], cwd=clone, capture_output=True)
        assert missing.returncode != 0, name
    dot_git = clone / ".git"
    assert not (dot_git / "objects" / "info" / "alternates").exists()
    assert not (dot_git / "FETCH_HEAD").exists()
    assert not (dot_git / "logs").exists()
    assert (
        not (dot_git / "packed-refs").exists()
        or "v1.1" not in (dot_git / "packed-refs").read_text()
    )
    assert git("remote", cwd=clone).strip() == ""
    every_byte = b"".join(p.read_bytes() for p in dot_git.rglob("*") if p.is_file())
    assert b"fix-branch" not in every_byte and b"v1.1" not in every_byte
    assert str(tmp_path / "mirrors").encode() not in every_byte


def test_a_validator_checkout_of_the_later_tag_has_the_fix(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    later = history_with_a_later_fix(repo)
    clone = tmp_path / "clone"
    assert fresh_clone(str(repo), "v1.1", clone, tmp_path / "mirrors") == later["fix_commit"]
    assert git("rev-list", "--count", "HEAD", cwd=clone).strip() == "2"
