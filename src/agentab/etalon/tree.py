"""git on a tree that a confined process wrote: through a git directory agentab owns.

An agent, a setup and a validator write into their checkout, its `.git` included. git honours
what it finds there: `core.fsmonitor`, a `filter.<x>.clean`, a `diff.<x>.textconv`, hooks,
`core.worktree`, attributes. A hostile agent set them and agentab's own `git add` and `git diff`
ran its payload on the host (it read the credentials, rewrote a validator, left a process that
read the seals' key). So agentab never runs git with a checkout's own git directory once hostile
code has touched it. Each checkout gets a *controlled* git directory beside it (never inside it,
never in any sandbox's view): a HEAD, a config agentab wrote, an exclude list agentab wrote,
and the etalon's objects borrowed read-only from the mirror. git runs with that directory and
the checkout as a plain work tree; fsmonitor, hooks, attributes files, external diff, textconv,
filters and replace refs are all off; system and global config unread. In-tree files git reads
(`.gitignore`, `.gitattributes`) name no program, since no driver is configured: data only.
"""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agentab.errors import AgentabError

CONTROLLED_SUFFIX = ".agentab-git"
# Every setting through which a repository can make git run a program, or read a file other
# than the ones named here, forced off on the command line (it wins over any config file).
FORCED = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.untrackedCache=false",
    "core.splitIndex=false",
    "core.sparseCheckout=false",
    "core.symlinks=true",
    "diff.external=",
    "diff.renames=false",
    "status.showUntrackedFiles=all",
)
CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfilemode = true\n"
TOOLING_EXCLUDES = ("/.snakemake_timestamp",)
READ_CHUNK = 1 << 16


def controlled_gitdir(tree: Path) -> Path:
    """Where a checkout's controlled git directory lives: beside it, under its parent, which no
    sandbox binds (a sandbox binds the checkout itself)."""
    tree = Path(tree)
    return tree.parent / f".{tree.name}{CONTROLLED_SUFFIX}"


def make_controlled_gitdir(tree: Path, sha: str, objects: Path) -> Path:
    """The controlled git directory of `tree`, whose etalon is commit `sha` in `objects` (the
    mirror's object store, borrowed read-only: objects git writes stay in ours)."""
    gitdir = controlled_gitdir(tree)
    for folder in ("objects/info", "refs/heads", "refs/tags", "info"):
        (gitdir / folder).mkdir(parents=True, exist_ok=True)
    (gitdir / "HEAD").write_text(f"{sha}\n")
    (gitdir / "config").write_text(CONFIG)
    (gitdir / "objects" / "info" / "alternates").write_text(f"{Path(objects).absolute()}\n")
    (gitdir / "info" / "exclude").write_text("".join(f"{p}\n" for p in TOOLING_EXCLUDES))
    (gitdir / "agentab-base").write_text(f"{sha}\n")
    return gitdir


@dataclass(frozen=True)
class PatchResult:
    """The agent's work as a patch: its bytes (None when it passed its cap), its size, and the
    files it touches as git lists them."""

    patch: bytes | None
    size: int
    files: list[str]

    @property
    def over_cap(self) -> bool:
        return self.patch is None


class TreeGit:
    """git on `tree` through its controlled git directory; never the tree's own `.git`."""

    def __init__(self, tree: Path):
        self.tree = Path(tree).absolute()
        self.gitdir = controlled_gitdir(self.tree)
        if not (self.gitdir / "HEAD").is_file():
            raise AgentabError(
                f"{self.tree} has no controlled git directory: agentab made no checkout there"
            )
        self.base = (self.gitdir / "agentab-base").read_text().strip()

    # ------------------------------------------------------------------ running git safely

    def env(self, index: Path | None = None) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/nonexistent",
            "GIT_DIR": str(self.gitdir),
            "GIT_WORK_TREE": str(self.tree),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
        }
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        return env

    def command(self, *args: str) -> list[str]:
        forced = [item for setting in FORCED for item in ("-c", setting)]
        return ["git", *forced, *args]

    def run(self, *args: str, index: Path | None = None, check: bool = True) -> bytes:
        done = subprocess.run(
            self.command(*args),
            cwd=self.tree,
            env=self.env(index),
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
        if check and done.returncode != 0:
            raise AgentabError(
                f"git {' '.join(args)} failed in {self.tree}: "
                f"{done.stderr.decode(errors='replace').strip()[-500:]}"
            )
        return done.stdout

    def staged_index(self) -> Path:
        """A private index of the etalon commit with the tree's whole state added (excluded
        files left out): what every question about the agent's work is asked of."""
        index = self.private_base_index()
        self.run("add", "--all", "--", ".", index=index)
        return index

    # ------------------------------------------------------------------ questions

    def exclude(self, paths: list[str]) -> None:
        """Keep paths (anchored to the tree's root) out of every answer: bricks agentab placed,
        what setup made."""
        exclude = self.gitdir / "info" / "exclude"
        known = exclude.read_text().splitlines()
        lines = [f"/{PurePosixPath(p).as_posix().strip('/')}" for p in paths]
        new = [line for line in dict.fromkeys(lines) if line not in known]
        if new:
            with exclude.open("a") as handle:
                handle.write("".join(f"{line}\n" for line in new))

    def untracked(self, ignored: bool = False) -> list[str]:
        """Files and folders that are not the etalon's, folders whole: those git ignores
        (`.gitignore`, the exclude list) too when `ignored`."""
        index = self.private_base_index()
        standard = [] if ignored else ["--exclude-standard"]
        try:
            out = self.run(
                "ls-files", "-z", "--others", "--directory", "--no-empty-directory", *standard,
                index=index,
            )  # fmt: skip
        finally:
            index.unlink(missing_ok=True)
        return [name.rstrip("/") for name in split_z(out)]

    def tracked_changed(self) -> bool:
        """Whether a file of the etalon differs from its tagged content (or is gone)."""
        index = self.private_base_index()
        try:
            self.run("update-index", "-q", "--refresh", index=index, check=False)
            out = self.run("diff-files", "--name-only", "-z", index=index)
        finally:
            index.unlink(missing_ok=True)
        return bool(split_z(out))

    def differences(self) -> list[str]:
        """Every path whose state differs from the etalon commit: changed, removed or added
        (ignored included; a folder that is wholly new as `name/`). Empty for a tree exactly as
        tagged."""
        index = self.private_base_index()
        try:
            self.run("update-index", "-q", "--refresh", index=index, check=False)
            changed = split_z(self.run("diff-files", "--name-only", "-z", index=index))
            others = split_z(self.run("ls-files", "-z", "--others", "--directory", index=index))
        finally:
            index.unlink(missing_ok=True)
        return changed + others

    def private_base_index(self) -> Path:
        """A new index of the etalon commit, for one question (the caller removes it)."""
        index = self.gitdir / f"index-{secrets.token_hex(6)}"
        self.run("read-tree", self.base, index=index)
        return index

    def patch(self, cap_bytes: int | None = None) -> PatchResult:
        """The agent's work against the etalon commit (binary-safe, untracked files included,
        excluded files not), or None in place of its bytes when it is larger than `cap_bytes`:
        such a patch is never held in memory whole, nor written."""
        index = self.staged_index()
        try:
            files = files_of_numstat(
                self.run("diff", "--cached", "--numstat", "-z", "--no-renames", self.base,
                         index=index)
            )  # fmt: skip
            patch, size = self.capped_diff(index, cap_bytes)
        finally:
            index.unlink(missing_ok=True)
        return PatchResult(patch, size, files)

    def capped_diff(self, index: Path, cap_bytes: int | None) -> tuple[bytes | None, int]:
        args = ["diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv"]
        process = subprocess.Popen(
            self.command(*args, "--no-renames", self.base),
            cwd=self.tree,
            env=self.env(index),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        chunks, size = [], 0
        while chunk := process.stdout.read(READ_CHUNK):
            size += len(chunk)
            if cap_bytes is None or size <= cap_bytes:
                chunks.append(chunk)
            else:
                chunks = []  # counted to the end, kept no further
        errors = process.stderr.read()
        if process.wait() != 0:
            raise AgentabError(
                f"git diff failed in {self.tree}: {errors.decode(errors='replace').strip()}"
            )
        over = cap_bytes is not None and size > cap_bytes
        return (None if over else b"".join(chunks)), size

    def apply(self, patch_file: Path) -> None:
        """Apply a run's patch to this checkout. git refuses a path inside `.git` and a file
        beyond a symbolic link the patch made."""
        self.run("apply", "--binary", "--whitespace=nowarn", str(Path(patch_file).absolute()))

    def etalon_files(self) -> dict[str, str]:
        """Every path of the etalon commit and its mode (100644, 100755, 120000, 160000)."""
        out = self.run("ls-tree", "-r", "-z", "--full-tree", self.base)
        found = {}
        for entry in split_z(out):
            meta, _, path = entry.partition("\t")
            found[path] = meta.split(" ")[0]
        return found

    def etalon_blob(self, path: str) -> bytes:
        return self.run("cat-file", "blob", f"{self.base}:{path}")


def split_z(out: bytes) -> list[str]:
    """git's -z output: NUL-separated paths, as written (UTF-8, never quoted)."""
    return [item for item in out.decode("utf-8", errors="surrogateescape").split("\0") if item]


def files_of_numstat(out: bytes) -> list[str]:
    """The paths of `git diff --numstat -z` or `git apply --numstat -z`, in order, each once.
    A rename is `added\\tdeleted\\t\\0old\\0new\\0`: both paths count."""
    items = out.decode("utf-8", errors="surrogateescape").split("\0")
    files: list[str] = []
    position = 0
    while position < len(items):
        entry = items[position]
        position += 1
        if not entry:
            continue
        stats = entry.split("\t", 2)
        if len(stats) == 3 and stats[2]:
            paths = [stats[2]]
        else:  # a rename: the two paths follow
            paths = items[position : position + 2]
            position += 2
        for path in paths:
            if path and path not in files:
                files.append(path)
    return files


def patch_files(patch: bytes) -> list[str]:
    """The paths a patch touches, as git itself reads the patch (quoted names, renames and
    binary files included), never by a pattern over its text. git reads it outside any
    repository: nothing of a checkout's configuration is involved. Text git cannot read as a
    patch names no file."""
    if not patch.strip():
        return []
    done = subprocess.run(
        ["git", "apply", "--numstat", "-z", "--allow-empty", "-"],
        input=patch,
        cwd="/",  # in no repository: git reads the patch as `patch` would
        env={
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/nonexistent",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_CEILING_DIRECTORIES": "/",
            "LC_ALL": "C",
        },
        capture_output=True,
    )
    return files_of_numstat(done.stdout) if done.returncode == 0 else []
