"""The etalon's repository: a pinned tag, its local mirror, a fresh clone for every run.

A local mirror per repository is fetched once. Beside it, each tag is fetched once from the
mirror into a pristine checkout that no agent or validator is ever given: the tag and its past
only (no other tag, no branch, no remote, no reflog, no object the tag cannot reach: a later
fix in the repository's history would hand the agent the answer). Each run gets a copy of that
checkout, with its own `.git` directory (never a shared gitdir, never a copy of a work tree
someone used), so nothing an agent does in one clone can reach the mirror or another run. A copy costs a tenth of the git
commands it replaces, and a run and each of its validators make one. A run's outcome is
always etalon + `result.patch`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agentab.errors import AgentabError, problem
from agentab.etalon.protect import Restored, restore_protected
from agentab.etalon.tree import TreeGit, controlled_gitdir, make_controlled_gitdir, patch_files
from agentab.files import exclusive_lock, open_inside

GIT_IDENTITY = ("agent", "agent@agentab.invalid")
# Files the workflow engine itself leaves in a clone: never the agent's work.
TOOLING_FILES = [".snakemake_timestamp"]
# Inside a mirror: each tag's pristine checkout (PRISTINE_TREE) and its commit (PRISTINE_SHA).
PRISTINE_CHECKOUTS = "agentab-checkouts"
# Part of a pristine checkout's folder name: checkouts made before they held the tag's past only
# (a full clone of the mirror) are never reused.
PRISTINE_KIND = "past-only"
PRISTINE_TREE = "tree"
PRISTINE_SHA = "sha"


@dataclass(frozen=True)
class EtalonProblem:
    key: str
    text: str
    fix: str


def git_env(**extra: str) -> dict[str, str]:
    """A constructed environment for git: no user or system config leaks into a measurement."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/nonexistent",  # git reads no user config from a HOME that does not exist
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }
    env.update(extra)
    return env


def git(*args: str, cwd: Path | None = None, env: dict | None = None, check: bool = True) -> str:
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=env or git_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if check and result.returncode != 0:
        raise AgentabError(
            f"git {' '.join(args)} failed: {result.stderr.strip() or result.stdout.strip()}"
        )
    return result.stdout


def exclude_from_git(clone: Path, paths: list[str]) -> None:
    """List paths in `.git/info/exclude`, anchored to the clone's root, each once: the agent's
    own git then shows none of them. agentab's own answers come from the controlled git
    directory, which gets them too. The clone's file is opened without following a link (a
    setup may have made one that points out of the clone)."""
    if not paths:
        return
    lines = [f"/{PurePosixPath(p).as_posix().strip('/')}" for p in paths]
    with open_inside(clone, ".git/info/exclude", os.O_RDWR | os.O_CREAT) as handle:
        existing = handle.read().decode(errors="replace").splitlines()
        new = [line for line in dict.fromkeys(lines) if line not in existing]
        if new:
            prefix = "\n" if existing and existing[-1] != "" else ""
            note = "# placed by agentab: harness files, not the agent's work\n"
            handle.write((prefix + note + "".join(f"{line}\n" for line in new)).encode())
    if (controlled_gitdir(clone) / "HEAD").is_file():
        TreeGit(clone).exclude(paths)


def is_url(location: str) -> bool:
    return bool(
        re.match(r"^[a-z][a-z0-9+.-]*://", location) or re.match(r"^[^/]+@[^/]+:", location)
    )


def list_refs(location: str) -> dict[str, str] | None:
    """ref name -> sha as the repository advertises them; None when it cannot be reached."""
    result = subprocess.run(
        ["git", "ls-remote", location],
        env=git_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        return None
    refs = {}
    for line in result.stdout.splitlines():
        sha, _, ref = line.partition("\t")
        refs[ref] = sha
    return refs


def etalon_problem(location: str, tag: str) -> EtalonProblem | None:
    """Why this repository and tag cannot be an etalon, or None when they can."""
    if not is_url(location) and not Path(location).exists():
        return EtalonProblem(
            "repo",
            f"the repository {location} does not exist",
            "give a path (relative to the scenario), a URL or a git bundle",
        )
    refs = list_refs(location)
    if refs is None:
        return EtalonProblem(
            "repo",
            f"{location} is not a git repository git can read",
            "give a git repository, a bundle (git bundle create … --all) or a URL",
        )
    if f"refs/tags/{tag}" in refs:
        return None
    tags = sorted(
        ref.removeprefix("refs/tags/")
        for ref in refs
        if ref.startswith("refs/tags/") and not ref.endswith("^{}")
    )
    known = (
        f"tags there: {', '.join(tags)}"
        if tags
        else "the repository has no tag: create one (git tag v1.0 && git bundle create … --all)"
    )
    if f"refs/heads/{tag}" in refs:
        return EtalonProblem(
            "tag",
            f"`{tag}` is a branch, not a tag: a branch moves, so yesterday's measures would stop comparing with tomorrow's",
            f"tag the state to measure and name the tag; {known}",
        )
    if re.fullmatch(r"[0-9a-fA-F]{7,40}", tag):
        return EtalonProblem(
            "tag",
            f"`{tag}` is a commit SHA, not a tag: a tag makes the measured state named as well as immutable",
            f"tag that commit (git tag <name> {tag}) and name the tag; {known}",
        )
    return EtalonProblem("tag", f"`{tag}` is not a tag of {location}", known)


def repository_name(location: str) -> str:
    """A clone's folder name: the repository's own name, the same for every cell and run."""
    stem = Path(location.rstrip("/")).name.removesuffix(".git").removesuffix(".bundle")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-.") or "repo"


def mirror_path(location: str, mirrors_dir: Path) -> Path:
    digest = hashlib.sha256(location.encode()).hexdigest()[:16]
    stem = re.sub(r"[^A-Za-z0-9]+", "-", Path(location.rstrip("/")).name).strip("-") or "repo"
    return Path(mirrors_dir) / f"{stem}-{digest}.git"


def _has_tag(mirror: Path, tag: str) -> bool:
    return bool(git("tag", "--list", tag, cwd=mirror, check=False).strip())


def ensure_mirror(location: str, tag: str, mirrors_dir: Path) -> Path:
    """The local mirror of the repository, fetched once, and again only when the tag is missing."""
    mirror = mirror_path(location, mirrors_dir)
    with exclusive_lock(mirror.with_suffix(".lock")):
        if not (mirror / "HEAD").exists():
            shutil.rmtree(mirror, ignore_errors=True)
            partial = mirror.with_suffix(".partial")
            shutil.rmtree(partial, ignore_errors=True)
            git("clone", "--mirror", "--quiet", location, str(partial))
            partial.rename(mirror)
        if not _has_tag(mirror, tag):
            git(
                "fetch",
                "--quiet",
                "--force",
                "--tags",
                location,
                "+refs/*:refs/*",
                cwd=mirror,
                check=False,
            )
        if not _has_tag(mirror, tag):
            raise AgentabError(
                problem(
                    location,
                    "etalon.tag",
                    f"`{tag}` is not a tag of the repository",
                    "tag the state to measure, or fix [etalon].tag",
                )
            )
    return mirror


class EtalonFault(AgentabError):
    """The etalon's tree could not be had as its tag has it: the job is redone, never run."""


def fresh_clone(location: str, tag: str, dest: Path, mirrors_dir: Path) -> str:
    """Clone the tag into dest (emptied first: a retry must not inherit a used clone); return its SHA."""
    dest = Path(dest)
    pristine, sha = pristine_checkout(location, tag, mirrors_dir)
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # symlinks=True: a link in the repository stays a link, as git would check it out.
    shutil.copytree(pristine, dest, symlinks=True)
    control(dest, sha, location, mirrors_dir)
    verify_tree(dest, sha, pristine.parent, tag)
    return sha


def control(tree: Path, sha: str, location: str, mirrors_dir: Path) -> TreeGit:
    """Give a checkout of the etalon its controlled git directory (`tree.py`): how agentab
    asks git about it once hostile code has touched it."""
    gitdir = controlled_gitdir(tree)
    shutil.rmtree(gitdir, ignore_errors=True)
    make_controlled_gitdir(tree, sha, mirror_path(location, mirrors_dir) / "objects")
    return TreeGit(tree)


def verify_tree(tree: Path, sha: str, pristine_folder: Path, tag: str) -> None:
    """The copy is the tag's tree, byte for byte: its HEAD is the tag's commit, and git finds no
    change, untracked or ignored file (the copy's stat data differs from its index, so git
    compares every file's content). The shared checkout every run is copied from was once
    poisoned by an agent: such a tree is a fault, never a run, and the checkout is made again
    from the mirror's objects."""
    head = git("rev-parse", "HEAD", cwd=tree).strip()
    changes = TreeGit(tree).differences()
    if head == sha and not changes:
        return
    shutil.rmtree(pristine_folder, ignore_errors=True)
    shown = "; ".join(changes[:5]) or f"HEAD {head[:12]} is not {sha[:12]}"
    raise EtalonFault(
        f"the checkout of etalon tag {tag} differed from the tag ({shown}): it is made again "
        "from the mirror, and the job is redone"
    )


def pristine_folder(mirror: Path, tag: str) -> Path:
    """Where the tag's pristine checkout lives: inside the mirror, so that it goes with it."""
    digest = hashlib.sha256(f"{PRISTINE_KIND}\0{tag}".encode()).hexdigest()[:16]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", tag).strip("-.") or "tag"
    return mirror / PRISTINE_CHECKOUTS / f"{stem}-{digest}"


def pristine_checkout(location: str, tag: str, mirrors_dir: Path) -> tuple[Path, str]:
    """The tag's pristine checkout and its commit SHA, made once from the mirror.

    The SHA file is written inside the folder before the folder takes its name, so a folder
    that has its name is complete, and every later run reads it without taking the lock.
    """
    folder = pristine_folder(mirror_path(location, mirrors_dir), tag)
    sha_file = folder / PRISTINE_SHA
    if not sha_file.is_file():
        mirror = ensure_mirror(location, tag, mirrors_dir)
        with exclusive_lock(mirror.with_suffix(".lock")):
            if not sha_file.is_file():
                make_pristine_checkout(mirror, tag, folder)
    return folder / PRISTINE_TREE, sha_file.read_text().strip()


def make_pristine_checkout(mirror: Path, tag: str, folder: Path) -> None:
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    tree = partial / PRISTINE_TREE
    tree.parent.mkdir(parents=True)
    # No template: git's sample hooks and description are inert, and half the files that every
    # run and every validator would otherwise copy and remove.
    git("init", "--quiet", "--template=", str(tree))
    git("config", "core.logAllRefUpdates", "false", cwd=tree)
    # A fetch, not a clone: a clone takes every tag, branch and object of the mirror (a local
    # clone even links its whole object store); the pack protocol sends the objects the tag
    # reaches, and nothing else. No FETCH_HEAD is written: it would name the mirror. The
    # objects stay one pack (git unpacks a small fetch into loose files: more for every run
    # to copy).
    ref = f"refs/tags/{tag}"
    git(
        "-c", "fetch.unpackLimit=1", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
        f"file://{Path(mirror).absolute()}", f"+{ref}:{ref}", cwd=tree,
    )  # fmt: skip
    git("checkout", "--quiet", "--detach", ref, cwd=tree)
    git("config", "user.name", GIT_IDENTITY[0], cwd=tree)
    git("config", "user.email", GIT_IDENTITY[1], cwd=tree)
    shutil.rmtree(tree / ".git" / "logs", ignore_errors=True)
    exclude_from_git(tree, TOOLING_FILES)
    (partial / PRISTINE_SHA).write_text(tag_sha(tree, tag) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)


def tag_sha(repo: Path, tag: str) -> str:
    return git("rev-parse", f"refs/tags/{tag}^{{commit}}", cwd=repo).strip()


def checkout_with_patch(
    location: str,
    tag: str,
    patch_file: Path,
    dest: Path,
    mirrors_dir: Path,
    before_patch=None,
    protect: tuple[str, ...] = (),
    touched: list[str] | None = None,
) -> Restored:
    """A fresh checkout of etalon + patch: how a validator sees a run's result, on its own.
    `before_patch(dest)` runs on the checkout as tagged (the etalon's setup). Then the protected
    paths the patch touched (`touched`, else as git reads the patch) are given back as tagged
    (`protect.py`); what was restored and removed is returned."""
    fresh_clone(location, tag, dest, mirrors_dir)
    if before_patch is not None:
        before_patch(dest)
    patch = Path(patch_file).read_bytes()
    if not patch:
        return Restored()
    # The setup ran in this checkout, confined: its `.git` is no longer agentab's.
    tree = TreeGit(dest)
    tree.apply(patch_file)
    return restore_protected(tree, protect, patch_files(patch) if touched is None else touched)
