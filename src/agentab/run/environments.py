"""Made once, copied after: the environment the etalon's setup makes, kept per etalon and setup.

A setup that makes a virtualenv and installs the test dependencies takes seconds to minutes, and
it runs in every fresh checkout: the agent's clone and each script validator's, in every run.
Confined, every checkout is `/workspace` inside its sandbox, so what setup made in one pristine
checkout (the `.venv`, an `.egg-info`; its paths name `/workspace`, never the host) is what it
would make in any other. The first checkout of a (commit, setup, path) runs the setup and keeps
a copy of what it created; every later one gets a copy of that copy. A copy, not a link: what the
agent does to its environment stays in its own clone. Code in the environment still points at
`/workspace`, so a run's own code is what is imported.

A package manager's configuration that changed (another index, another CA) makes it anew: the
configuration files setup read are part of the key. A setup that changes files the etalon
tracks is not kept: its effect is not a set of new files,
and it runs in every checkout as before. Unconfined (`confinement: none`), paths name the host's
checkout, so nothing is kept either.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from agentab.etalon import TreeGit
from agentab.files import exclusive_lock, write_json

FORMAT = 1  # bump when what is kept changes: older copies are then not reused
READY = "kept.json"


def environment_key(
    sha: str, setup: tuple[str, ...], path: tuple[str, ...], config: dict[str, str] | None = None
) -> str:
    """What decides an environment: the commit, the setup, its path, and the package managers'
    configuration it read (name -> sha256: another index, another environment)."""
    decided = {"format": FORMAT, "sha": sha, "setup": list(setup), "path": list(path)}
    if config:  # without any, the key a kept environment had before configurations counted
        decided["package_config"] = dict(sorted(config.items()))
    return hashlib.sha256(json.dumps(decided).encode()).hexdigest()[:24]


def kept_environment(environments: Path, key: str) -> Path:
    return environments / key


def reuse(kept: Path, checkout: Path) -> dict | None:
    """Copy a kept environment into `checkout`; its record, or None when none is kept."""
    try:
        record = json.loads((kept / READY).read_text())
    except (OSError, ValueError):
        return None
    for relative in record["created"]:
        copy_path(kept / "tree" / relative, checkout / relative)
    return record


def keep(checkout: Path, kept: Path, seconds: float) -> dict | None:
    """Keep what setup created in the pristine `checkout`; None when it changed tracked files."""
    tree = TreeGit(checkout)  # the setup ran there: its `.git` is not agentab's any more
    if tree.tracked_changed():
        return None
    created = tree.untracked(ignored=True)
    partial = kept.with_name(kept.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for relative in created:
        copy_path(checkout / relative, partial / "tree" / relative)
    record = {"created": created, "seconds": round(seconds, 3)}
    write_json(record, partial / READY)
    shutil.rmtree(kept, ignore_errors=True)
    partial.rename(kept)
    return record


def copy_path(source: Path, dest: Path) -> None:
    """`cp -a`: symlinks as symlinks (a virtualenv's python is one), modes and times kept."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["cp", "-a", "--reflink=auto", str(source), str(dest)],
        check=True,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
    )


def lock_for(kept: Path):
    """Jobs that need the same environment wait while the first of them makes it."""
    return exclusive_lock(kept.with_name(kept.name + ".lock"))
