"""What each confined process sees: the agent, a validator script.

Every path inside is neutral and the same for every run and every cell: nothing a confined
process is handed or can find names its cell, its repetition or the project's folders.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from agentab.confinement.bwrap import View
from agentab.confinement.memory import (
    COPIES_FOLDER,
    execute_only_copy,
    interpreter_binds,
    node_binds,
)

WORKSPACE = "/workspace"  # the agent's clone, or a validator's checkout: read-write, its cwd
AGENT = "/agent"  # the agent's scratch: its harness's config dir, HOME and TMPDIR
HARNESS = "/opt/harness"  # the pinned harness install, read-only
NODE = "/opt/node"  # Node.js from PyPI, read-only
BRICKS = "/opt/bricks"  # the cell's bricks, read-only, at their paths as written
VALIDATOR = "/opt/validator"  # a validator script's folder, read-only
INPUTS = "/inputs"  # a validator's context file, transcript and patch, read-only
HOME = "/home/validator"  # a validator's HOME and TMPDIR
CACHE = "/cache"  # the setup's download cache, shared across runs


def agent_view(
    clone: Path,
    scratch: Path,
    installation,
    bricks,
    tmp: Path | None = None,
    disk=None,
    harness_binary: Path | None = None,
) -> View:
    """The agent: its clone and scratch writable, its harness, Node.js and bricks read-only.
    Its /tmp is `tmp` (a folder of the run's capped space), else a private tmpfs of at most
    `disk` bytes. Node.js, and `harness_binary` (the executable that starts a native harness,
    in its install), run from execute-only copies: the harness is then not dumpable, and the
    agent's commands cannot open its memory (`memory.py`)."""
    root = Path(installation.root)
    copies = root.parents[1] / COPIES_FOLDER
    read_only = {root: HARNESS}
    if installation.node is not None:
        node = Path(installation.node)
        read_only[node.parent] = NODE
        read_only.update(node_binds(node, copies, str(PurePosixPath(NODE) / node.name)))
    if harness_binary is not None and Path(harness_binary).is_relative_to(root):
        inside = PurePosixPath(HARNESS) / Path(harness_binary).relative_to(root)
        read_only[execute_only_copy(Path(harness_binary), copies)] = str(inside)
    for brick in bricks:
        read_only[Path(brick.path)] = str(PurePosixPath(BRICKS) / brick.rel)
    writable = {Path(clone): WORKSPACE, Path(scratch): AGENT}
    if tmp is not None:
        writable[Path(tmp)] = "/tmp"
    return View(
        read_only=read_only,
        writable=writable,
        private=() if tmp is not None else ("/tmp",),
        private_size=disk,
        cwd=WORKSPACE,
    )


def validator_view(
    checkout: Path,
    home: Path,
    script_folder: Path | None,
    inputs: Path,
    network: bool,
    disk: int | None = None,
) -> View:
    """A validator script: its checkout and HOME writable; its own folder and its inputs (the
    folder of its context file, transcript and patch) read-only; a private /tmp of at most
    `disk` bytes (it runs the run's code, whose limits are the run's). It runs as an
    execute-only copy of its interpreter (kept beside its HOME), so the code under test it
    starts cannot open its memory (`memory.py`)."""
    read_only = {Path(inputs): INPUTS}
    read_only.update(interpreter_binds(Path(home).parent / "execute-only"))
    if script_folder is not None:
        read_only[Path(script_folder)] = VALIDATOR
    return View(
        read_only=read_only,
        writable={Path(checkout): WORKSPACE, Path(home): HOME},
        cwd=WORKSPACE,
        network=network,
        private_size=disk,
    )


def setup_view(checkout: Path, cache: Path, config: dict[Path, str] | None = None) -> View:
    """The etalon's setup: its checkout and the shared download cache writable, the network,
    and the caller's package-manager configuration read-only (`package_config.py`)."""
    return View(
        read_only=dict(config or {}),
        writable={Path(checkout): WORKSPACE, Path(cache): CACHE},
        cwd=WORKSPACE,
        network=True,
    )
