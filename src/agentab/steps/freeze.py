"""Freeze step: results/<name>/scenario.toml, the scenario exactly as it was run."""

from __future__ import annotations

from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.steps.common import run_step


def build(parser) -> None:
    parser.add_argument("--scenario", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)


def act(args) -> int:
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial")
    try:
        text = args.scenario.read_bytes()
    except OSError as error:
        raise AgentabError(
            problem(
                args.scenario, "scenario", f"cannot read it: {error.strerror}", "check the path"
            )
        ) from error
    partial.write_bytes(text)
    partial.replace(args.out)
    return 0


if __name__ == "__main__":
    run_step(build, act)
