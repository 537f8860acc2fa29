"""The README's recipe for a tree from an sdist (scenarios/more-itertools/README.md), run as
written by whoever runs the tests (root here, as in many containers): as root, a plain `tar xzf`
gives the files the archive's owner, and git then refuses the tree (`detected dubious
ownership`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.real_repository import NO_GIT_CONFIG, TAG, bundle_from_sdist

pytestmark = [pytest.mark.e2e]


def test_the_readme_recipe_builds_a_bundle_of_the_tag(tmp_path: Path) -> None:
    bundle = bundle_from_sdist(tmp_path / "mi")
    git = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **NO_GIT_CONFIG}
    heads = subprocess.run(
        ["git", "bundle", "list-heads", str(bundle)], env=git, capture_output=True, text=True
    )
    assert heads.returncode == 0, heads.stderr
    assert f"refs/tags/{TAG}" in heads.stdout
    tree = bundle.parent
    owners = {path.stat().st_uid for path in tree.rglob("*") if ".git" not in path.parts}
    assert owners == {os.getuid()}  # every file the recipe left is its runner's
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "-b", TAG, str(bundle), str(clone)], env=git, check=True)
    assert (clone / "more_itertools" / "recipes.py").is_file()
    assert not (clone / "PKG-INFO").exists()
