"""The etalon's environment (DESIGN §12): `[etalon] setup`, run in every fresh checkout.

A real repository needs its dependencies: without them the agent's `pytest` fails on every call,
and a validator may import a copy of the package installed elsewhere. So the scenario's setup
commands run in the agent's clone before the agent starts, and in each script validator's
checkout after the run's patch is applied: in a sandbox like theirs, but with the network, and
with a download cache shared across runs (outside results/). What setup creates is kept out of
`result.patch`; a setup that fails is a fault (the job is redone), its output kept in the log.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from agentab.etalon import exclude_from_git, git
from agentab.harnesses.base import HarnessFault
from agentab.run.confinement import NONE
from agentab.run.process import CannotStart, run_process
from agentab.run.sandbox import Sandbox
from agentab.run.views import CACHE, WORKSPACE, setup_view

SHOWN_LINES = 5


def setup_env(cache: str, home: str) -> dict[str, str]:
    """The system's tools, and every common package manager pointed at the shared cache."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": "/tmp",
        "LC_ALL": "C.UTF-8",
        "PIP_CACHE_DIR": f"{cache}/pip",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "UV_CACHE_DIR": f"{cache}/uv",
        "npm_config_cache": f"{cache}/npm",
    }


def run_setup(etalon, checkout: Path, log: Path, cache: Path, lock: Path, confinement: str) -> None:
    """Run the etalon's setup in `checkout` (nothing when it declares none). Raises HarnessFault
    when a command fails or the setup passes its time limit."""
    if not etalon.setup:
        return
    cache.mkdir(parents=True, exist_ok=True)
    script = "exec 2>&1\nset -e\n" + "\n".join(etalon.setup) + "\n"
    sandbox = None
    if confinement == NONE:
        argv, env, cwd = ["/bin/sh", "-c", script], setup_env(str(cache), str(cache)), checkout
    else:
        argv, env, cwd = ["/bin/sh", "-c", script], setup_env(CACHE, "/tmp"), Path(WORKSPACE)
        sandbox = Sandbox(setup_view(checkout, cache))
    try:
        result = run_process(
            argv,
            env=env,
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
    keep_out_of_the_patch(checkout)


def keep_out_of_the_patch(checkout: Path) -> None:
    """What setup created (a virtualenv, build files) is the environment, not the agent's work."""
    created = git(
        "ls-files", "--others", "--directory", "--no-empty-directory", "--exclude-standard",
        cwd=checkout,
    )  # fmt: skip
    exclude_from_git(checkout, [line for line in created.splitlines() if line])


def path_entries(entries, root: str) -> list[str]:
    """The `[etalon] path` folders as seen from `root` (the checkout's path where it is used)."""
    return [str(PurePosixPath(root) / entry) for entry in entries]


def last_lines(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no output)"
    return " | ".join(lines[-SHOWN_LINES:]) or "(no output)"
