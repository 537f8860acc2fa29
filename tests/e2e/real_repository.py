"""A real repository for end-to-end tests: more-itertools at v8.0.2, built from its sdist on
PyPI (the registries are what CI reaches; github.com may not be) into a git bundle with the
upstream tag, and the shipped scenario pointed at it."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path

PROJECT, VERSION, TAG = "more-itertools", "8.0.2", "v8.0.2"
GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_AUTHOR_NAME": "sdist",
    "GIT_AUTHOR_EMAIL": "sdist@example.invalid",
    "GIT_COMMITTER_NAME": "sdist",
    "GIT_COMMITTER_EMAIL": "sdist@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def bundle_from_sdist(folder: Path) -> Path:
    """more-itertools 8.0.2's sdist as a git bundle tagged v8.0.2: the tagged tree less the
    repository's CI files, and less the sdist's build metadata, which setup makes anew."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         f"{PROJECT}=={VERSION}", "-d", str(folder)],
        check=True, capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )  # fmt: skip
    with tarfile.open(folder / f"{PROJECT}-{VERSION}.tar.gz") as archive:
        archive.extractall(folder, filter="data")
    tree = folder / f"{PROJECT}-{VERSION}"
    for generated in [tree / "PKG-INFO", *tree.glob("*.egg-info/*")]:
        generated.unlink()
    for step in (
        ["init", "-q"],
        ["add", "-A"],
        ["commit", "-qm", f"{PROJECT} {VERSION}, from its sdist"],
        ["tag", TAG],
        ["bundle", "create", "-q", str(folder / f"{PROJECT}.bundle"), "--all"],
    ):
        subprocess.run(["git", *step], cwd=tree, check=True, env=GIT_ENV, capture_output=True)
    return folder / f"{PROJECT}.bundle"


def point_at(scenario: Path, bundle: Path) -> None:
    text = scenario.read_text()
    scenario.write_text(re.sub(r'(?m)^repo = "[^"]*"', f'repo = "{bundle}"', text, count=1))
