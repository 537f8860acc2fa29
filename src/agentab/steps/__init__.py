"""One entry point per workflow step: `python -m agentab.steps.<step> …`.

Each step runs unchanged on a laptop or a cluster node, outside Snakemake too: the workflow
rules only call them. A step prints a person-readable error and exits 2 on bad input, and
exits non-zero on a fault so that Snakemake redoes the job.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from agentab.errors import AgentabError


def run_step(
    build: Callable[[argparse.ArgumentParser], None], act: Callable[[argparse.Namespace], int]
) -> None:
    """Parse the step's arguments, act, and turn a user error into its message and exit 2."""
    parser = argparse.ArgumentParser(prog=f"python -m {sys.modules['__main__'].__spec__.name}")
    build(parser)
    args = parser.parse_args()
    try:
        code = act(args)
    except AgentabError as error:
        print(error.render(), file=sys.stderr)
        code = 2
    sys.exit(code)


def run_in_script(snakemake, cli_arguments: list[str]) -> None:
    """The one call of a `script:` rule: an `agentab` command, its output sent to the rule's log."""
    from agentab.cli import main

    with open(snakemake.log[0], "w") as log:
        sys.stdout = sys.stderr = log
        code = main([str(argument) for argument in cli_arguments])
    sys.exit(code)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", type=Path, required=True, help="the scenario TOML file")
    parser.add_argument("--cell", required=True, help="the cell's slug")
    parser.add_argument("--rep", type=int, required=True, help="the repetition, from 1")
