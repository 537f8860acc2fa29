"""No process in a sandbox may read or write the memory of the process that started it.

Every process of a sandbox runs as the same user, so without more the agent's bash could open
`/proc/<harness>/mem` and rewrite its harness's memory (measured: a brick's text changed in
pi's heap, and the next request carried the altered treatment), read its environment, copy
its descriptors through `/proc/<pid>/fd`, and code under test could do the same to the
validator script that started it. The kernel lets a process of the same user open those files
unless the target is *not dumpable*: then it asks for `CAP_SYS_PTRACE` in the target's user
namespace, which no process of a sandbox has (`--cap-drop ALL`). And the kernel makes a process
not dumpable when it was started from a file its user cannot read (fs/exec.c, `would_dump`).

So the processes to protect start from a private copy of their binary whose mode is execute
only (0111): the harness's Node.js or its own native executable (Claude Code, Codex CLI), and a
validator's interpreters (`python3`, `sh`, `bash`). The copy is bound read-only over the
binary's path inside, so the command line is unchanged; the sandbox user owns it (host root
maps to it) but cannot read it, and cannot change its mode on a read-only mount. (Root of a
user namespace of its own making may read it; the running harness's memory still asks for a
capability in the sandbox's namespace: measured refused.) What the protected process starts
from a readable binary (the agent's shell, the code under test) is dumpable as usual: it can
reach its own children, never its parent. The other doors are closed elsewhere: `ptrace`, `process_vm_*` and `pidfd_getfd` by
`seccomp.py`; bwrap's own first process, which bwrap makes dumpable again and which holds the
sandbox's standard output, by hiding `/proc/1` (`bwrap.py`); Node's inspector, which a
`SIGUSR1` would open on 127.0.0.1:9229, by `--disable-sigusr1` (`harnesses/npm.py`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import threading
from pathlib import Path

EXECUTE_ONLY = 0o111
# Where a harness's execute-only binaries are kept, in the harnesses' folder (once per binary).
COPIES_FOLDER = ".execute-only"
# A validator's interpreters: what a script validator, its `tests` runner and the code under
# test they start run as (found on the system's PATH, as a validator's PATH has them).
INTERPRETERS = ("python3", "sh", "bash")
SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


def execute_only_copy(binary: Path, folder: Path) -> Path:
    """A copy of `binary` that no one but root can read, kept in `folder` under a name of the
    binary's path, size, time and inode (made once; concurrent callers each rename theirs)."""
    real = Path(os.path.realpath(binary))
    found = real.stat()
    key = f"{real}\0{found.st_size}\0{found.st_mtime_ns}\0{found.st_ino}"
    copy = folder / hashlib.sha256(key.encode()).hexdigest()[:16] / real.name
    with contextlib.suppress(OSError):
        made = copy.stat()
        if made.st_size == found.st_size and stat.S_IMODE(made.st_mode) == EXECUTE_ONLY:
            return copy
    copy.parent.mkdir(parents=True, exist_ok=True)
    partial = copy.with_name(f".{real.name}.{os.getpid()}.{threading.get_ident()}")
    shutil.copyfile(real, partial)
    os.chmod(partial, EXECUTE_ONLY)
    os.replace(partial, copy)
    return copy


def node_binds(node_bin: Path, copies: Path, inside_bin: str) -> dict[Path, str]:
    """The harness's Node.js, execute only (kept in `copies`), over `inside_bin`/node."""
    return {execute_only_copy(Path(node_bin) / "node", copies): f"{inside_bin}/node"}


def interpreter_binds(folder: Path) -> dict[Path, str]:
    """Each system interpreter a validator runs as, execute only, over its real path (which is
    its path inside too: the system is bound where it is)."""
    binds: dict[Path, str] = {}
    for name in INTERPRETERS:
        for directory in SYSTEM_PATH:
            path = Path(directory) / name
            if path.is_file():
                real = Path(os.path.realpath(path))
                seen_inside = real.is_relative_to("/usr") or real.is_relative_to("/bin")
                if seen_inside and str(real) not in binds.values():
                    binds[execute_only_copy(real, folder)] = str(real)
                break
    return binds
