"""`agentab sandbox SCENARIO --cell SLUG [--run COMMAND]`: what a cell's agent sees, and a
command run where it runs.

It makes the same fresh clone of the etalon, with the same environment (`[etalon] setup` run in
it, or what it made copied in, and `[etalon] path` first on PATH), and the same sandbox as a
run of that cell, prints
the view (every path inside, read-only or writable, and where it comes from), and runs COMMAND
in it, on the sandbox's terms: `agentab sandbox scenarios/demo/scenario.toml --cell rule-off
--run 'ls / /opt; cat /proc/1/cmdline'`. Nothing is measured and nothing is written to results/.
"""

from __future__ import annotations

import secrets
import shutil
import sys
from pathlib import Path

from agentab import etalon
from agentab.confinement.bwrap import View, require_sandbox
from agentab.confinement.endpoint import ENDPOINT_URL, Sandbox
from agentab.confinement.views import agent_view
from agentab.errors import AgentabError, problem
from agentab.harnesses import get_harness
from agentab.harnesses.base import HarnessFault
from agentab.run.process import run_process
from agentab.run.setup import path_entries, run_setup
from agentab.run.workspace import claim
from agentab.scenario import load_scenario

PLAIN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/agent/home", "LC_ALL": "C.UTF-8"}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sandbox",
        help="show what a cell's agent sees in its sandbox, and run a command there",
        description=(
            "Make a fresh clone of the etalon as a run of the cell would, with its environment "
            "([etalon] setup run in it, [etalon] path first on PATH), print the agent's "
            "sandbox view (docs/confinement.md), and run --run COMMAND in that sandbox: its output is "
            "what the agent would see. The model endpoint is not served: nothing listens at "
            f"{ENDPOINT_URL}. Nothing is written to results/."
        ),
    )
    parser.add_argument("scenario", type=Path, metavar="SCENARIO", help="the scenario TOML file")
    parser.add_argument(
        "--cell", required=True, help="the cell's slug, e.g. rule-off (rule-off--<task> with tasks)"
    )
    parser.add_argument(
        "--state", type=Path, default=Path(".agentab"), help="the state folder (default .agentab)"
    )
    parser.add_argument(
        "--run", metavar="COMMAND", help="a shell command to run inside, as the agent's bash would"
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    require_sandbox("bwrap")
    command = ["/bin/sh", "-c", args.run] if args.run else []
    scenario = load_scenario(args.scenario)
    cell = scenario.run_cell(args.cell)
    harness = get_harness(cell.agent.harness)
    try:
        installation = harness.installation(cell.agent.version, args.state / "harnesses")
    except AgentabError:
        raise AgentabError(
            problem(
                str(args.scenario),
                "agent.version",
                f"{cell.agent.harness} {cell.agent.version} is not installed under "
                f"{args.state / 'harnesses'}",
                "run `snakemake --cores 8` once (it installs the pinned harness), or pass --state",
            )
        ) from None
    folder = (args.state / "work").absolute() / secrets.token_hex(10)
    claim(folder)  # killed, its folder is removed at the workflow's next start
    try:
        clone = folder / etalon.repository_name(scenario.etalon.location)
        run_etalon = scenario.etalon_for(cell)
        etalon.fresh_clone(
            run_etalon.location, run_etalon.tag, clone, (args.state / "mirrors").absolute()
        )
        set_up(run_etalon, clone, folder, args.state.absolute(), args.scenario)
        scratch = folder / "agent"
        (scratch / "home").mkdir(parents=True)
        view = agent_view(clone, scratch, installation, cell.bricks)
        env = agent_env(run_etalon.path, view.cwd)
        print(describe(view))
        print(f"PATH: {env['PATH']}")
        if not command:
            return 0
        result = run_process(
            command,
            env=env,
            cwd=Path(view.cwd),
            stdout_path=folder / "stdout",
            stderr_path=folder / "stderr",
            timeout_s=600,
            lock_path=folder / "lock",
            sandbox=Sandbox(view),
        )
        print(f"--- {args.run}", flush=True)
        sys.stdout.buffer.write((folder / "stdout").read_bytes())
        sys.stderr.buffer.write((folder / "stderr").read_bytes())
        return result.exit_code if result.exit_code is not None else 124
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def set_up(run_etalon, clone: Path, folder: Path, state: Path, scenario: Path) -> None:
    """The etalon's setup, as a run's: in the clone, in the setup's sandbox, with the shared
    download cache, or what it made in an earlier checkout of the commit copied in."""
    if not run_etalon.setup:
        return
    log = folder / "setup.log"
    try:
        made = run_setup(
            run_etalon, clone, log, state / "cache", folder / "setup.lock", "bwrap",
            environments=state / "environments", list_packages=False,
        )  # fmt: skip
    except HarnessFault as fault:
        raise AgentabError(
            problem(
                str(scenario),
                "etalon.setup",
                str(fault).split("; its output is in")[0],
                "fix the setup's commands; `agentab check --setup SCENARIO` runs them alone",
            )
        ) from None
    how = "copied in from an earlier checkout of this commit" if made.reused else "ran"
    print(f"setup: {how} in {made.seconds:.1f}s ({len(run_etalon.setup)} command(s))")


def agent_env(path, cwd: str) -> dict[str, str]:
    """The command's environment: `[etalon] path` first on PATH, as the agent's bash has it."""
    first = path_entries(path, cwd)
    return {**PLAIN_ENV, "PATH": ":".join([*first, PLAIN_ENV["PATH"]])}


def describe(view: View) -> str:
    lines = ["inside            access      from"]
    lines.append(f"{'/usr, /etc':<17} read-only   this machine's system")
    lines += [
        f"{inside:<17} {'writable' if writable else 'read-only':<11} {host}"
        for host, inside, writable in view.mounts()
    ]
    lines += [f"{folder:<17} writable    empty, its own" for folder in view.private]
    lines.append(f"network: {'the host' if view.network else f'none but {ENDPOINT_URL}'}")
    lines.append("processes: its own only (a pid namespace); all end with the run")
    return "\n".join(lines)
