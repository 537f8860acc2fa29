"""The /etc a confined process sees: the few files programs need, never the host's secrets.

Bound whole, the host's /etc gave an agent `/etc/shadow`, ssh host keys and TLS private keys to
read (inside, it runs as a user whose files, seen from the host, are root's). So a sandbox's /etc
is an empty tmpfs with the entries below bound read-only where the host has them, a passwd and a
group file of agentab's naming only the sandbox's users, and nothing else; then it is made
read-only. What is here is what the dynamic linker, name lookup, TLS, locales, shells and the
interpreters the etalons use read at start.
"""

from __future__ import annotations

import atexit
import glob
import os
import secrets
import shutil
from pathlib import Path

# The user a confined process runs as, inside its own user namespace: not root, so that no
# program takes root's paths (Claude Code refuses to skip permissions as root), and no file of
# the host that only root may read is the process's own.
INSIDE_UID = 1000
INSIDE_GID = 1000
INSIDE_USER = "sandbox"

# Host entries under /etc a sandbox may read (globs), each bound read-only where it exists.
ALLOWED = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "os-release",
    "debian_version",
    "ca-certificates",
    "ca-certificates.conf",
    "ssl/certs",
    "ssl/openssl.cnf",
    "pki/tls/certs",
    "pki/ca-trust/extracted",
    "hosts",
    "resolv.conf",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "services",
    "protocols",
    "networks",
    "mime.types",
    "magic",
    "magic.mime",
    "profile",
    "profile.d",
    "bash.bashrc",
    "inputrc",
    "locale.alias",
    "locale.conf",
    "python3*",
    "perl",
    "java-*",
    "terminfo",
)


def allowed_entries(etc: Path = Path("/etc")) -> list[str]:
    """The allowed entries this host has, as paths relative to /etc, sorted (parents first)."""
    found = set()
    for pattern in ALLOWED:
        for match in glob.glob(str(etc / pattern)):
            if os.path.exists(match):  # a link that leads nowhere would stop bwrap
                found.add(str(Path(match).relative_to(etc)))
    return sorted(found, key=lambda entry: (entry.count("/"), entry))


def users_text() -> tuple[str, str]:
    passwd = (
        "root:x:0:0:root:/root:/bin/sh\n"
        f"{INSIDE_USER}:x:{INSIDE_UID}:{INSIDE_GID}:{INSIDE_USER}:/tmp:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    group = f"root:x:0:\n{INSIDE_USER}:x:{INSIDE_GID}:\nnogroup:x:65534:\n"
    return passwd, group


_MADE: dict[int, Path] = {}


def made_files() -> Path:
    """This process's folder of the files agentab writes for a sandbox's /etc (passwd, group,
    hostname): made once per process (a fork makes its own), removed when it exits."""
    pid = os.getpid()
    if pid not in _MADE:
        # A fixed place, not TMPDIR's: agentab reads no environment variable.
        folder = Path("/tmp") / f"agentab-etc-{pid}-{secrets.token_hex(4)}"
        folder.mkdir(mode=0o755)
        folder.chmod(0o755)
        passwd, group = users_text()
        for name, text in (("passwd", passwd), ("group", group), ("hostname", "sandbox\n")):
            (folder / name).write_text(text)
            (folder / name).chmod(0o644)
        _MADE[pid] = folder
        atexit.register(_remove_if_ours, pid, folder)
    return _MADE[pid]


def _remove_if_ours(pid: int, folder: Path) -> None:
    if os.getpid() == pid:
        shutil.rmtree(folder, ignore_errors=True)


def etc_arguments(extra: list[tuple[str, str]] = ()) -> list[str]:
    """bwrap's arguments for the sandbox's /etc. `extra`: (host, inside) read-only binds under
    /etc that a view asks for (the caller's pip.conf for a setup), made before /etc turns
    read-only."""
    made = made_files()
    args = ["--tmpfs", "/etc"]
    for entry in allowed_entries():
        args += ["--ro-bind", f"/etc/{entry}", f"/etc/{entry}"]
    for name in ("passwd", "group", "hostname"):
        args += ["--ro-bind", str(made / name), f"/etc/{name}"]
    args += ["--symlink", "/proc/self/mounts", "/etc/mtab"]
    for host, inside in extra:
        args += ["--ro-bind", host, inside]
    return [*args, "--remount-ro", "/etc"]
