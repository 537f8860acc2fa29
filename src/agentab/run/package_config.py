"""The caller's package-manager configuration, handed to the etalon's setup (docs/scenario.md).

Where the registries are reached through a mirror, a private index or a company CA, `pip
install` in setup works only with the configuration the caller's own `pip` uses. So setup gets
the package managers' user configuration files (pip.conf, uv.toml, .npmrc), mounted read-only
where the tools look for them, and the local folders and files those name, with the folders a
local index's pages link to (an index's `simple/` pages often link to `../../files/`, a folder
the configuration never names). Only setup gets them,
never the agent or a validator, and a run records their names, never their contents: an index
URL may carry a token.

The machine's own configuration files count too: pip reads `/etc/pip.conf` (and
`/etc/xdg/pip/pip.conf`), uv `/etc/uv/uv.toml`, npm its prefix's `etc/npmrc`. The sandbox's /etc
holds few of the host's files (`confinement/etc.py`), so those under /etc are bound at their own
path, read-only; those under /usr are there already. A run records every file setup read, by
name and by the sha256 of its content (`setup.package_config`): two runs whose setup read other
settings are told apart, and a changed file makes the environment anew (`environments.py`).

Their environment variables (`PIP_INDEX_URL`, …) are not read: agentab reads no environment
variable (core concepts), and a file is what a person can see and the run can name. A setting
that only a variable carries goes into one of these files, or into the setup's own commands.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from agentab.confinement.etc import allowed_entries

# The user configuration files, relative to the home folder, where each tool looks for them.
USER_FILES = (".config/pip/pip.conf", ".pip/pip.conf", ".config/uv/uv.toml", ".npmrc")
# The machine's: pip's site-wide files, uv's system file, npm's global file in its prefixes.
SYSTEM_FILES = (
    "/etc/pip.conf",
    "/etc/xdg/pip/pip.conf",
    "/etc/uv/uv.toml",
    "/etc/xdg/uv/uv.toml",
    "/usr/etc/npmrc",
    "/usr/local/etc/npmrc",
)
ETC = "/etc"
# Already in every sandbox, read-only (/etc only in part: `confinement/etc.py`); and folders
# that are never handed over whole.
VISIBLE = ("/usr",)
NEVER = ("/proc", "/sys", "/dev", "/run")

_ABSOLUTE = re.compile(r"(?:file://)?(/[^\s'\"=,;:]+)")
_HREF = re.compile(r"""href\s*=\s*["']([^"'#?]+)""", re.IGNORECASE)
# The pages of a local index read for where their links lead: a PEP 503 index has one per
# project, a few kilobytes each; past this many, a folder is not an index but a disk.
MOST_PAGES = 20_000


@dataclass
class PackageConfig:
    """What setup gets of the package managers' configuration: the files to mount, and the
    name and content hash of every file it reads."""

    mounts: dict[Path, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    sha256: dict[str, str] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list, repr=False)  # for the paths they name

    def add(self, name: str, path: Path) -> None:
        """Count a file setup reads."""
        data = read_bytes(path)
        self.files.append(name)
        self.sha256[name] = hashlib.sha256(data).hexdigest()
        self.texts.append(data.decode("utf-8", errors="replace"))

    def record(self) -> dict:
        """What a run keeps: which files setup read and the hash of each, never their
        contents (an index URL may carry a token)."""
        return {"files": sorted(self.files), "sha256": dict(sorted(self.sha256.items()))}


def caller_package_config(
    home: Path | None = None, home_inside: str = "/tmp", system: Path = Path("/")
) -> PackageConfig:
    """The package managers' configuration, as a confined setup (whose HOME is `home_inside`)
    gets it: the caller's user files and the machine's (`system`: the root they are under).
    `home` is the caller's home folder, from the password database (not $HOME)."""
    home = Path(home if home is not None else pwd.getpwuid(os.getuid()).pw_dir)
    config = system_package_config(system, mount=True)
    for relative in USER_FILES:
        path = home / relative
        if path.is_file():
            config.mounts[path] = str(PurePosixPath(home_inside) / relative)
            config.add(f"~/{relative}", path)
    for named in named_paths(config.texts, home):
        config.mounts.setdefault(named, str(named))
    return config


def system_package_config(system: Path = Path("/"), mount: bool = False) -> PackageConfig:
    """The machine's configuration files that exist; with `mount`, those a sandbox would not
    see bound at their own path (an unconfined setup reads them where they are)."""
    config = PackageConfig()
    for name in SYSTEM_FILES:
        path = Path(system) / name.lstrip("/")
        if not path.is_file():
            continue
        config.add(name, path)
        if mount and name.startswith(ETC + "/") and not seen_in_sandbox_etc(name):
            config.mounts[path] = name
    return config


def seen_in_sandbox_etc(name: str) -> bool:
    """Whether a sandbox's /etc already holds this host file (an entry bound whole)."""
    relative = name.removeprefix(ETC + "/")
    return any(relative == e or relative.startswith(e + "/") for e in allowed_entries())


def named_paths(texts: list[str], home: Path) -> list[Path]:
    """The local files and folders the configuration names (a wheel folder, a CA bundle), at
    their own paths: the configuration refers to them as they are."""
    found: list[Path] = []
    for text in texts:
        for match in _ABSOLUTE.finditer(text):
            path = Path(match.group(1))
            if path not in found and mountable(path, home):
                found.append(path)
    for folder in [path for path in found if path.is_dir()]:
        for linked in index_links(folder):
            if not any(linked == p or p in linked.parents for p in found) and mountable(
                linked, home
            ):
                found.append(linked)
    return found


def index_links(folder: Path) -> list[Path]:
    """The folders outside `folder` that a local index's pages link to: pip reads a
    `file://` index's pages where they are, and fetches each file at the link's path, relative
    to its page. A folder without pages (a find-links folder of wheels) links to nothing; a
    file behind a symbolic link is read where the link leads. Paths as text: a setup reads an
    index of a thousand pages, and pathlib's objects cost most of that time."""
    root = str(folder)
    try:
        with os.scandir(root) as entries:
            projects = sorted(entry.path for entry in entries if entry.is_dir())
    except OSError:
        return []
    places: dict[str, None] = {}
    for page in [root, *projects[:MOST_PAGES]]:
        text = read_bytes(Path(page, "index.html")).decode("utf-8", errors="replace")
        for href in _HREF.findall(text):
            target = link_target(page, href)
            if target is not None:
                places[os.path.dirname(target)] = None
                if os.path.islink(target):
                    places[os.path.dirname(os.path.realpath(target))] = None
    inside = root.rstrip("/") + "/"
    outside = [place for place in places if place != root and not place.startswith(inside)]
    return widest(sorted({beside(root, place) for place in outside}))


def beside(index: str, place: str) -> str:
    """The folder to bind for a linked `place`: the one beside the index's own branch that holds
    it (`/srv/web/packages` for `/srv/web/packages/8a/1b/<hash>` linked from `/srv/web/simple`:
    one bind, not one per file's folder), or `place` itself where that folder would be a
    machine's top folder."""
    common = os.path.commonpath([index, place])
    below = os.path.relpath(place, common).split(os.sep)[0]
    folder = os.path.join(common, below)
    return folder if below != os.curdir and len(Path(folder).parts) >= 3 else place


def widest(places: list[str]) -> list[Path]:
    """The places that no other place holds, in order (`places` sorted)."""
    kept: list[str] = []
    for place in places:
        if not any(place == k or place.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(place)
    return [Path(place) for place in kept]


def link_target(page: str, href: str) -> str | None:
    """The local file a link of an index page (in the folder `page`) names, or None (another
    page, a URL)."""
    href = unquote(href.strip())
    if href.endswith("/"):
        return None
    if href.startswith("file://"):
        href = urlsplit(href).path
    elif re.match(r"^[a-z][a-z0-9+.-]*:", href, re.IGNORECASE):
        return None
    return os.path.normpath(os.path.join(page, href))


def mountable(path: Path, home: Path) -> bool:
    """A path setup may see: it exists, is not already visible, and is no ancestor of the
    caller's home or working folder (a `find-links = /` must not hand over the machine). Under
    /etc, a file only (a CA bundle), never a folder (`/etc/ssl` holds private keys)."""
    if len(path.parts) < 3 or not path.exists():
        return False
    text = str(path)
    if any(text == root or text.startswith(root + "/") for root in VISIBLE + NEVER):
        return False
    if text.startswith(ETC + "/") and (not path.is_file() or seen_in_sandbox_etc(text)):
        return False
    return not any(place == path or path in place.parents for place in (home, Path.cwd()))


def read_bytes(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""
