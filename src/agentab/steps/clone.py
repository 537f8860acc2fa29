"""Clone step: a fresh clone of the etalon tag, from the local mirror, for one run."""

from __future__ import annotations

from pathlib import Path

from agentab.etalon import fresh_clone
from agentab.scenario import load_scenario
from agentab.steps import run_step


def build(parser) -> None:
    parser.add_argument("--scenario", type=Path, required=True)
    parser.add_argument(
        "--out", type=Path, required=True, help="the clone's folder (emptied first)"
    )
    parser.add_argument("--mirrors-dir", type=Path, required=True)


def act(args) -> int:
    scenario = load_scenario(args.scenario, check_etalon=False, check_bricks=False)
    sha = fresh_clone(scenario.etalon.location, scenario.etalon.tag, args.out, args.mirrors_dir)
    print(f"cloned {scenario.etalon.repo}@{scenario.etalon.tag} ({sha[:12]}) into {args.out}")
    return 0


if __name__ == "__main__":
    run_step(build, act)
