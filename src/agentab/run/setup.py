"""The etalon's environment (docs/scenario.md): `[etalon] setup`, run in every fresh checkout.

A real repository needs its dependencies: without them the agent's `pytest` fails on every call,
and a validator may import a copy of the package installed elsewhere. So the scenario's setup
commands run in the agent's clone before the agent starts, and in each script validator's
checkout before the run's patch is applied (nothing the agent wrote runs with the network): in a
sandbox like theirs, but with the network, the caller's package-manager configuration
(`package_config.py`) and a download cache shared across runs (outside results/). What setup
creates is kept out of `result.patch`; a setup that fails is a fault (the job is redone), its
output kept in the log. The environment it made is listed, for the run to record.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agentab.confinement.bwrap import NONE
from agentab.confinement.endpoint import Sandbox
from agentab.confinement.views import CACHE, WORKSPACE, setup_view
from agentab.etalon import TreeGit, exclude_from_git
from agentab.harnesses.base import HarnessFault
from agentab.run.environments import environment_key, keep, kept_environment, lock_for, reuse
from agentab.run.package_config import caller_package_config, system_package_config
from agentab.run.process import CannotStart, run_process

SHOWN_LINES = 5
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
SETUP_HOME = "/tmp"  # inside the sandbox: a private tmpfs
# What the environment's first Python has installed, as `pip freeze` would list it, without
# needing pip: `importlib.metadata` reads the same records, in a tenth of the time. Then a
# `project <name>` line for each package installed from the checkout itself (its
# `direct_url.json` names the working folder): the etalon's own, whose version each commit
# sets, which the synthesis does not count as a difference of environment.
LIST_PACKAGES = (
    "import importlib.metadata as m, json, os, sys\n"
    "print('python', sys.version.split()[0], sys.prefix)\n"
    "found = list(m.distributions())\n"
    "names = {f\"{d.metadata['Name']}=={d.version}\" for d in found}\n"
    "print(*sorted(names, key=str.lower), sep='\\n')\n"
    "here = 'file://' + os.getcwd()\n"
    "def url(d):\n"
    "    try:\n"
    "        return str(json.loads(d.read_text('direct_url.json') or '{}').get('url', ''))\n"
    "    except (ValueError, AttributeError):\n"
    "        return ''\n"
    "own = {d.metadata['Name'] for d in found if url(d) == here or url(d).startswith(here + '/')}\n"
    "for name in sorted(own, key=str.lower):\n"
    "    print('project', name)\n"
)


@dataclass
class SetupRecord:
    """What a run keeps of its setup: how long it took, which of the caller's package-manager
    configuration it got (by name), and the environment it made."""

    seconds: float = 0.0
    package_config: dict = field(default_factory=dict)
    environment: list[str] = field(default_factory=list)
    reused: bool = False  # copied in from an earlier checkout (environments.py)

    def environment_sha256(self) -> str | None:
        if not self.environment:
            return None
        return hashlib.sha256("\n".join(self.environment).encode()).hexdigest()

    def as_dict(self) -> dict:
        return {
            "seconds": round(self.seconds, 3),
            "reused": self.reused,
            "package_config": self.package_config,
            "environment_sha256": self.environment_sha256(),
        }


def setup_env(cache: str, home: str) -> dict[str, str]:
    """The system's tools, and every common package manager pointed at the shared cache."""
    return {
        "PATH": SYSTEM_PATH,
        "HOME": home,
        "TMPDIR": "/tmp",
        "LC_ALL": "C.UTF-8",
        "PIP_CACHE_DIR": f"{cache}/pip",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "UV_CACHE_DIR": f"{cache}/uv",
        "npm_config_cache": f"{cache}/npm",
    }


def run_setup(
    etalon,
    checkout: Path,
    log: Path,
    cache: Path,
    lock: Path,
    confinement: str,
    *,
    environments: Path | None = None,
    list_packages: bool = True,
) -> SetupRecord:
    """Run the etalon's setup in `checkout` (nothing when it declares none), or copy in what it
    made in an earlier checkout of the same commit (`environments.py`, kept under
    `environments`); then list the environment. Raises HarnessFault when a command fails or the
    setup passes its time limit."""
    if not etalon.setup:
        return SetupRecord()
    cache.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    confined = confinement != NONE
    # Unconfined, setup's HOME is the cache folder: it sees none of the caller's files, and the
    # machine's where they are.
    config = caller_package_config(home_inside=SETUP_HOME) if confined else system_package_config()
    where = (Path(WORKSPACE), CACHE) if confined else (checkout, str(cache))

    def sandbox() -> Sandbox | None:  # one per process: a Sandbox confines one
        return Sandbox(setup_view(checkout, cache, config.mounts)) if confined else None

    def execute() -> None:
        run_commands(etalon, log, lock, where, sandbox())

    reused = False
    if confined and environments is not None:
        sha = TreeGit(checkout).base
        key = environment_key(sha, etalon.setup, etalon.path, config.record()["sha256"])
        kept = kept_environment(environments, key)
        with lock_for(kept):
            copying = time.monotonic()
            earlier = reuse(kept, checkout)
            if earlier is None:
                execute()
                keep(checkout, kept, time.monotonic() - started)
            else:
                reused = True
                log.write_text(copied_log(earlier, sha, time.monotonic() - copying))
    else:
        execute()
    keep_out_of_the_patch(checkout)
    environment = (
        list_environment(etalon.path, checkout, lock, where, sandbox()) if list_packages else []
    )
    return SetupRecord(time.monotonic() - started, config.record(), environment, reused)


def copied_log(earlier: dict, sha: str, seconds: float) -> str:
    """A copied setup's log: its own time, the copy's, never the first setup's as if it were."""
    return (
        f"setup not run here: copied in {seconds:.2f}s what it made in an earlier checkout of "
        f"{sha[:12]}: {', '.join(earlier['created'])} (that setup ran in "
        f"{earlier['seconds']:g}s)\n"
    )


def run_commands(etalon, log: Path, lock: Path, where, sandbox) -> None:
    script = "exec 2>&1\nset -e\n" + "\n".join(etalon.setup) + "\n"
    cwd, cache = where
    try:
        result = run_process(
            ["/bin/sh", "-c", script],
            env=setup_env(cache, SETUP_HOME if sandbox else cache),
            cwd=cwd,
            stdout_path=log,
            stderr_path=Path("/dev/null"),
            timeout_s=etalon.setup_timeout_s,
            lock_path=lock,
            sandbox=sandbox,
        )
    except CannotStart as error:
        raise HarnessFault(f"the etalon's setup could not start: {error}") from None
    if result.timed_out:
        raise HarnessFault(
            f"the etalon's setup passed its time limit ({etalon.setup_timeout_s:g}s, "
            f"[etalon] setup_timeout); its output is in {log}"
        )
    if result.exit_code != 0:
        raise HarnessFault(
            f"the etalon's setup failed (exit status {result.exit_code}): {last_lines(log)}; "
            f"its output is in {log}"
        )


def list_environment(path, checkout: Path, lock: Path, where, sandbox) -> list[str]:
    """The packages of the first `python3` on the setup's `path` (then the system's), listed in
    the setup's sandbox: the environment's own code (a .pth file, say) runs there too. Empty
    when there is no Python."""
    cwd, cache = where
    search = ":".join([*path_entries(path, str(cwd)), SYSTEM_PATH])
    listing, errors = checkout.parent / ".environment.txt", checkout.parent / ".environment.err"
    try:
        result = run_process(
            ["/bin/sh", "-c", 'exec python3 -c "$0"', LIST_PACKAGES],
            env={"PATH": search, "HOME": SETUP_HOME if sandbox else cache, "LC_ALL": "C.UTF-8"},
            cwd=cwd,
            stdout_path=listing,
            stderr_path=errors,
            timeout_s=120,
            lock_path=lock,
            sandbox=sandbox,
        )
        lines = listing.read_text(errors="replace").splitlines() if result.exit_code == 0 else []
    except CannotStart:
        lines = []
    finally:
        listing.unlink(missing_ok=True)
        errors.unlink(missing_ok=True)
    return lines


def keep_out_of_the_patch(checkout: Path) -> None:
    """What setup created (a virtualenv, build files) is the environment, not the agent's work.
    Asked through the checkout's controlled git directory: the setup ran in it, confined, and
    may have written its `.git`."""
    exclude_from_git(checkout, TreeGit(checkout).untracked())


def path_entries(entries, root: str) -> list[str]:
    """The `[etalon] path` folders as seen from `root` (the checkout's path where it is used)."""
    return [str(PurePosixPath(root) / entry) for entry in entries]


def last_lines(log: Path) -> str:
    """The setup's last lines that say something, each on one line: what a person reads of
    a failed setup in the job's message (its whole output is in the log)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "(no output)"
    said = [" ".join(line.split()) for line in lines if line.strip()]
    return " | ".join(said[-SHOWN_LINES:]) or "(no output)"
