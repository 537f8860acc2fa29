"""Freeze step: results/<name>/scenario.toml, the scenario exactly as it was run."""

from __future__ import annotations

from pathlib import Path

from agentab.steps import run_step


def build(parser) -> None:
    parser.add_argument("--scenario", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)


def act(args) -> int:
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial")
    partial.write_bytes(args.scenario.read_bytes())
    partial.replace(args.out)
    return 0


if __name__ == "__main__":
    run_step(build, act)
