"""`[validation] protect`: in a validator's checkout, the protected paths a patch touched are
given back as tagged and those it added removed, whatever the patch did to them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentab.etalon import TreeGit, checkout_with_patch, fresh_clone, git, is_protected
from agentab.etalon.protect import glob_problem
from tests.conftest import make_git_repo

PROTECT = ("tests/**", "conftest.py", "pytest.ini")
FILES = {
    "calc.py": "def mean(v):\n    return sum(v) / (len(v) - 1)\n",
    "tests/test_calc.py": "from calc import mean\n\ndef test_mean():\n    assert mean([2, 4]) == 3\n",
    "tests/helpers.py": "X = 1\n",
    "tests/data/sample.txt": "sample\n",
    "pytest.ini": "[pytest]\n",
}


def test_patterns_as_gitignore_writes_them():
    assert is_protected("tests", PROTECT) and is_protected("tests/a/b.py", PROTECT)
    assert is_protected("conftest.py", PROTECT) and is_protected("src/deep/conftest.py", PROTECT)
    assert not is_protected("testsuite/x.py", PROTECT) and not is_protected("calc.py", PROTECT)
    assert is_protected("src/test_x.py", ("test_*.py",))
    assert is_protected("a/b", ("a/*",)) and not is_protected("x/a/b", ("a/*",))
    assert glob_problem("../x") and glob_problem("/etc/passwd") and glob_problem(".git/hooks")
    assert glob_problem("tests/**") is None


def the_patch(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An agent's patch that renames, deletes, adds and links where the tests are."""
    repo = tmp_path / "repo"
    make_git_repo(repo, {**FILES, "tests/link": ""})
    (repo / "tests" / "link").unlink()
    (repo / "tests" / "link").symlink_to("helpers.py")  # the tag has a link among the tests
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    for step in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "link"],
                 ["tag", "-f", "v1.0"]):  # fmt: skip
        subprocess.run(["git", *step], cwd=repo, env=env, check=True, capture_output=True)
    clone = tmp_path / "clone"
    fresh_clone(str(repo), "v1.0", clone, tmp_path / "mirrors")
    (clone / "tests" / "test_calc.py").write_text("def test_mean():\n    pass\n")  # emptied
    os.rename(clone / "tests" / "helpers.py", clone / "tests" / "helpers_moved.py")  # renamed
    (clone / "pytest.ini").unlink()  # deleted
    (clone / "conftest.py").write_text("import pytest\ncollect_ignore_glob = ['*']\n")  # added
    (clone / "tests" / "conftest.py").write_text("raise SystemExit(0)\n")  # added, deeper
    (clone / "tests" / "link").unlink()
    (clone / "tests" / "link").symlink_to("/etc/passwd")  # a link retargeted out of the tree
    (clone / "calc.py").write_text("def mean(v):\n    return sum(v) / len(v)\n")  # the code
    made = TreeGit(clone).patch()
    patch = tmp_path / "result.patch"
    patch.write_bytes(made.patch)
    return repo, patch, clone


def test_restored_renamed_deleted_and_linked_paths_and_removed_added_ones(tmp_path):
    repo, patch, _ = the_patch(tmp_path)
    checkout = tmp_path / "checkout"
    done = checkout_with_patch(
        str(repo), "v1.0", patch, checkout, tmp_path / "mirrors", protect=PROTECT
    )
    assert sorted(done.removed) == ["conftest.py", "tests/conftest.py", "tests/helpers_moved.py"]
    assert sorted(done.restored) == [
        "pytest.ini", "tests/helpers.py", "tests/link", "tests/test_calc.py",
    ]  # fmt: skip
    for path, text in FILES.items():
        if path != "calc.py":
            assert (checkout / path).read_text() == text, path
    assert os.readlink(checkout / "tests" / "link") == "helpers.py"
    assert not (checkout / "conftest.py").exists()
    assert not (checkout / "tests" / "helpers_moved.py").exists()
    # The agent's own code stays its own.
    assert (checkout / "calc.py").read_text().endswith("/ len(v)\n")
    # git agrees: nothing protected differs from the tag.
    assert [p for p in TreeGit(checkout).differences() if is_protected(p, PROTECT)] == []


def test_a_protected_folder_the_patch_turned_into_a_link_comes_back_a_folder(tmp_path):
    repo = tmp_path / "repo"
    make_git_repo(repo, FILES)
    clone = tmp_path / "clone"
    fresh_clone(str(repo), "v1.0", clone, tmp_path / "mirrors")
    outside = tmp_path / "outside"
    outside.mkdir()
    subprocess.run(["rm", "-r", str(clone / "tests")], check=True)
    (clone / "tests").symlink_to(outside)  # restoring through it would write out of the tree
    patch = tmp_path / "result.patch"
    patch.write_bytes(TreeGit(clone).patch().patch)
    checkout = tmp_path / "checkout"
    done = checkout_with_patch(
        str(repo), "v1.0", patch, checkout, tmp_path / "mirrors", protect=PROTECT
    )
    assert (checkout / "tests").is_dir() and not (checkout / "tests").is_symlink()
    assert (checkout / "tests" / "test_calc.py").read_text() == FILES["tests/test_calc.py"]
    assert list(outside.iterdir()) == []
    assert "tests" in done.removed


def test_without_protect_the_patch_is_applied_whole(tmp_path):
    repo, patch, _ = the_patch(tmp_path)
    checkout = tmp_path / "checkout"
    done = checkout_with_patch(str(repo), "v1.0", patch, checkout, tmp_path / "mirrors")
    assert done.restored == done.removed == []
    assert (checkout / "conftest.py").exists()
    assert (checkout / "tests" / "test_calc.py").read_text() == "def test_mean():\n    pass\n"


@pytest.mark.parametrize("touched", [None, []])
def test_only_the_paths_the_patch_touched_are_looked_at(tmp_path, touched):
    repo, patch, _ = the_patch(tmp_path)
    checkout = tmp_path / "checkout"
    done = checkout_with_patch(
        str(repo), "v1.0", patch, checkout, tmp_path / "mirrors", protect=PROTECT, touched=touched
    )
    # None: git reads the patch; []: the caller says it touched nothing.
    assert bool(done.removed) is (touched is None)
    assert git("rev-parse", "HEAD", cwd=checkout).strip()


def test_protected_paths_of_any_bytes_are_removed_and_a_newline_hides_nothing(tmp_path):
    """Names the agent chose: not UTF-8, a newline; each is a path as any other, never two."""
    repo = tmp_path / "repo"
    make_git_repo(repo, FILES)
    clone = tmp_path / "clone"
    fresh_clone(str(repo), "v1.0", clone, tmp_path / "mirrors")
    added = ["tests/bad\udcff.py", "tests/two\nlines.py", "deep/any\nthing"]
    for name in added:
        (clone / name).parent.mkdir(exist_ok=True)
        (clone / name).write_text("raise SystemExit(0)\n")
    patch = tmp_path / "result.patch"
    patch.write_bytes(TreeGit(clone).patch().patch)
    checkout = tmp_path / "checkout"
    done = checkout_with_patch(
        str(repo), "v1.0", patch, checkout, tmp_path / "mirrors", protect=("tests/**", "**")
    )
    assert sorted(done.removed) == sorted(added)
    assert not any((checkout / name).exists() for name in added)
    assert is_protected("a\nb/c", ("**",)) and not is_protected("conftest.py\n", ("conftest.py",))
