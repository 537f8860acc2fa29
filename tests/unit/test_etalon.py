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
