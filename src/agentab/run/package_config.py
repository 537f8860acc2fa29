"""The caller's package-manager configuration, handed to the etalon's setup (DESIGN §12).

Where the registries are reached through a mirror, a private index or a company CA, `pip
install` in setup works only with the configuration the caller's own `pip` uses. So setup gets
the package managers' user configuration files (pip.conf, uv.toml, .npmrc), mounted read-only
where the tools look for them, and the local folders and files those name. Only setup gets them,
never the agent or a validator, and a run records their names, never their contents: an index
URL may carry a token.

Their environment variables (`PIP_INDEX_URL`, …) are not read: agentab reads no environment
variable (core concepts), and a file is what a person can see and the run can name. A setting
that only a variable carries goes into one of these files, or into the setup's own commands.
"""

from __future__ import annotations

import os
import pwd
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

# The user configuration files, relative to the home folder, where each tool looks for them.
USER_FILES = (".config/pip/pip.conf", ".pip/pip.conf", ".config/uv/uv.toml", ".npmrc")
# Already in every sandbox, read-only; and folders that are never handed over whole.
VISIBLE = ("/usr", "/etc")
NEVER = ("/proc", "/sys", "/dev", "/run")

_ABSOLUTE = re.compile(r"(?:file://)?(/[^\s'\"=,;:]+)")


@dataclass
class PackageConfig:
    """What setup gets of the caller's configuration: the files to mount, and their names."""

    mounts: dict[Path, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def record(self) -> dict:
        """The names a run keeps: which files setup got, never their contents."""
        return {"files": sorted(self.files)}


def caller_package_config(home: Path | None = None, home_inside: str = "/tmp") -> PackageConfig:
    """The caller's package-manager configuration, as setup (whose HOME is `home_inside`)
    gets it. `home` is the caller's home folder, from the password database (not $HOME)."""
    home = Path(home if home is not None else pwd.getpwuid(os.getuid()).pw_dir)
    config = PackageConfig()
    texts: list[str] = []
    for relative in USER_FILES:
        path = home / relative
        if path.is_file():
            config.mounts[path] = str(PurePosixPath(home_inside) / relative)
            config.files.append(f"~/{relative}")
            texts.append(read_text(path))
    for named in named_paths(texts, home):
        config.mounts.setdefault(named, str(named))
    return config


def named_paths(texts: list[str], home: Path) -> list[Path]:
    """The local files and folders the configuration names (a wheel folder, a CA bundle), at
    their own paths: the configuration refers to them as they are."""
    found: list[Path] = []
    for text in texts:
        for match in _ABSOLUTE.finditer(text):
            path = Path(match.group(1))
            if path not in found and mountable(path, home):
                found.append(path)
    return found


def mountable(path: Path, home: Path) -> bool:
    """A path setup may see: it exists, is not already visible, and is no ancestor of the
    caller's home or working folder (a `find-links = /` must not hand over the machine)."""
    if len(path.parts) < 3 or not path.exists():
        return False
    text = str(path)
    if any(text == root or text.startswith(root + "/") for root in VISIBLE + NEVER):
        return False
    return not any(place == path or path in place.parents for place in (home, Path.cwd()))


def read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
