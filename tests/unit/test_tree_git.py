"""git on a checkout that hostile code wrote, through a git directory agentab owns: nothing the
checkout's own `.git` says runs, and the files a patch touches come from git, never a pattern."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.etalon import TreeGit, checkout_with_patch, fresh_clone, git, patch_files
from agentab.files import open_inside, write_inside
from tests.conftest import make_git_repo


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    make_git_repo(repo, {"calc.py": "x = 1\n", "tests/test_calc.py": "assert True\n"})
    clone = tmp_path / "clone"
    fresh_clone(str(repo), "v1.0", clone, tmp_path / "mirrors")
    return clone


def poison(clone: Path, marker: Path) -> None:
    """What a hostile agent wrote into its clone's git: each setting runs a program that
    touches `marker`-<kind> when git honours it."""

    def payload(kind: str, then: str) -> str:
        return f"touch {marker}-{kind}; {then}"

    git("config", "core.fsmonitor", payload("fsmonitor", "false"), cwd=clone)
    git("config", "filter.x.clean", payload("filter", "cat"), cwd=clone)
    git("config", "filter.x.smudge", payload("smudge", "cat"), cwd=clone)
    git("config", "diff.x.textconv", payload("textconv", "cat"), cwd=clone)
    git("config", "diff.external", payload("external", "true"), cwd=clone)
    (clone / ".git" / "info" / "attributes").write_text("* filter=x diff=x\n")
    (clone / ".gitattributes").write_text("* filter=x diff=x\n")
    hook = clone / ".git" / "hooks" / "post-index-change"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\n{payload('hook', 'true')}\n")
    hook.chmod(0o755)


def markers(tmp_path: Path) -> list[str]:
    return sorted(path.name for path in tmp_path.glob("marker-*"))


def test_the_poison_is_live_for_the_clones_own_git(clone, tmp_path):
    # The control: each setting runs when git is asked with the clone's own directory.
    poison(clone, tmp_path / "marker")
    (clone / "calc.py").write_text("x = 2\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    for args in (["status"], ["add", "-A"], ["diff", "HEAD"], ["diff", "--no-ext-diff", "HEAD"]):
        subprocess.run(["git", *args], cwd=clone, env=env, capture_output=True)
    assert {
        "marker-fsmonitor",
        "marker-filter",
        "marker-textconv",
        "marker-hook",
        "marker-external",
    } <= set(markers(tmp_path))


def test_no_setting_of_the_clone_runs_when_agentab_asks(clone, tmp_path):
    poison(clone, tmp_path / "marker")
    (clone / "calc.py").write_text("x = 2\n")
    (clone / "new.py").write_text("y = 1\n")
    tree = TreeGit(clone)
    made = tree.patch()
    tree.untracked()
    tree.tracked_changed()
    tree.differences()
    assert markers(tmp_path) == []
    assert made.files == [".gitattributes", "calc.py", "new.py"]
    # The patch is the content itself, not what a filter or textconv made of it.
    assert b"+x = 2" in made.patch


def test_core_worktree_and_a_git_file_never_lead_the_patch_out_of_the_clone(clone, tmp_path):
    outside = tmp_path / "host-folder"
    outside.mkdir()
    (outside / "secret.txt").write_text("host file\n")
    git("config", "core.worktree", str(outside), cwd=clone)
    assert TreeGit(clone).patch().files == []
    # The clone's .git replaced by a file that points at another git directory.
    os.rename(clone / ".git", tmp_path / "moved-git")
    (clone / ".git").write_text(f"gitdir: {tmp_path / 'moved-git'}\n")
    (clone / "calc.py").write_text("x = 3\n")
    assert TreeGit(clone).patch().files == ["calc.py"]


def test_a_patch_over_its_cap_is_counted_and_never_kept(clone):
    (clone / "big.bin").write_bytes(os.urandom(300_000))
    made = TreeGit(clone).patch(cap_bytes=100_000)
    assert made.over_cap and made.patch is None
    assert made.size > 300_000
    assert made.files == ["big.bin"]
    small = TreeGit(clone).patch(cap_bytes=10_000_000)
    assert not small.over_cap and len(small.patch) == small.size


def test_changed_files_come_from_git_quoted_names_included(clone, tmp_path):
    (clone / "test_é.py").write_text("import os\nos._exit(0)\n")
    (clone / "with space.txt").write_text("x\n")
    (clone / "tests" / "test_calc.py").unlink()
    made = TreeGit(clone).patch()
    assert b'"b/test_\\303\\251.py"' in made.patch  # git quotes it in the patch's text
    expected = ["test_é.py", "tests/test_calc.py", "with space.txt"]
    assert made.files == patch_files(made.patch) == expected


def test_a_patch_git_cannot_read_names_no_file():
    assert patch_files(b"") == []
    assert patch_files(b"not a patch\n") == []


def test_the_patch_applies_through_the_controlled_directory(clone, tmp_path):
    (clone / "calc.py").write_text("x = 2\n")
    patch = tmp_path / "result.patch"
    patch.write_bytes(TreeGit(clone).patch().patch)
    marker = tmp_path / "marker"
    checkout = tmp_path / "checkout"

    def hostile_setup(tree: Path) -> None:  # a setup may write the checkout's git
        git("config", "core.worktree", str(tmp_path / "elsewhere"), cwd=tree)
        poison(tree, marker)

    repo = tmp_path / "repo"
    checkout_with_patch(str(repo), "v1.0", patch, checkout, tmp_path / "mirrors", hostile_setup)
    assert (checkout / "calc.py").read_text() == "x = 2\n"
    assert not (tmp_path / "elsewhere").exists()
    assert markers(tmp_path) == []


def test_a_patch_that_writes_into_git_or_beyond_a_link_is_refused(clone, tmp_path):
    tree = TreeGit(clone)
    into_git = tmp_path / "git.patch"
    into_git.write_text(
        "diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n"
        "@@ -0,0 +1 @@\n+[core]\n"
    )
    with pytest.raises(AgentabError):
        tree.apply(into_git)
    (clone / "link").symlink_to(tmp_path)
    beyond = tmp_path / "beyond.patch"
    beyond.write_text(
        "diff --git a/link/escaped b/link/escaped\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/link/escaped\n@@ -0,0 +1 @@\n+out\n"
    )
    with pytest.raises(AgentabError):
        tree.apply(beyond)
    assert not (tmp_path / "escaped").exists()


def test_host_writes_into_a_tree_never_follow_a_link(tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (tree / "sub").symlink_to(outside)
    (tree / "file").symlink_to(outside / "target")
    with pytest.raises(OSError):
        write_inside(tree, "sub/x.txt", b"escaped")
    write_inside(tree, "file", b"replaced the link itself")
    assert not (outside / "x.txt").exists() and not (outside / "target").exists()
    assert not (tree / "file").is_symlink()
    assert (tree / "file").read_bytes() == b"replaced the link itself"
    with pytest.raises(OSError), open_inside(tree, "sub/y", os.O_WRONLY | os.O_CREAT):
        pass
    write_inside(tree, "a/b/c.txt", b"made")
    assert (tree / "a" / "b" / "c.txt").read_bytes() == b"made"
