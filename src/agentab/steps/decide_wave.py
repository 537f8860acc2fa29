"""Decide-wave step: after wave k of a sequential scenario, which cells get wave k + 1.

It replays the decisions of waves 1 to k from the results folder's measures.json files
(`agentab.synthesis.waves.replay_waves`, the function the synthesis replays them with), and
writes results/<name>/waves/wave-<k>.json: the cells that get the next wave, each cell's waves
so far, and the wave at which each decided gap was decided. The workflow's checkpoint reads it
to know which runs come next. A wave in which the budget did not start a run gets no next wave:
the budget caps the whole experiment.
"""

from __future__ import annotations

from pathlib import Path

from agentab.files import write_json
from agentab.steps.common import run_step


def build(parser) -> None:
    parser.add_argument("--results", type=Path, required=True, help="results/<scenario>/")
    parser.add_argument("--wave", type=int, required=True, help="the wave just finished")
    parser.add_argument("--out", type=Path, required=True)


def act(args) -> int:
    decision = decide(args.results, args.wave)
    write_json(decision, args.out)
    return 0


def decide(results_dir: Path, wave: int) -> dict:
    from agentab.synthesis.runs.results import load_frozen_scenario
    from agentab.synthesis.waves import replay_results

    scenario = load_frozen_scenario(results_dir)
    plan = replay_results(results_dir, scenario, through=wave)
    return {
        "wave": wave,
        "next": plan.next_wave_cells(),
        "waves": plan.given,
        "halted_by_budget": sorted(plan.halted),
        "decided": {
            f"{cell} · {metric}": path.decided_at
            for (cell, metric), path in sorted(plan.paths.items())
            if path.established
        },
    }


if __name__ == "__main__":
    run_step(build, act)
