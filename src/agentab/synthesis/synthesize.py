"""The synthesis: every table, figure and verdict, rebuilt from the per-run files alone.

`synthesize(results_dir)` reads the frozen scenario (cells, reference, metric contract) and every
run's measures.json (`agentab.synthesis.runs.results`), computes each cell's values and each gap's verdict
(`agentab.synthesis.verdicts`), and writes `cells.csv`, `gaps.csv`, `measures.csv` (`agentab.synthesis.tables`),
`gaps.svg` (`agentab.synthesis.figures.figure`), `frontier.svg` (`agentab.synthesis.figures.frontier_figure`) and
`synthesis.md` (`agentab.synthesis.prose`). It needs no
agent, validator, network or workflow engine, so a verdict can be rebuilt at any time. The same
inputs give the same CSV bytes: nothing here depends on time, on file system order or on the
order gaps are computed.

A results folder is often partial (a stubborn fault, a run still going). The synthesis then
says which runs are missing, and a measures.json that cannot be read is listed with its path
and its problem; it never stops the others from counting.
"""

from __future__ import annotations

from pathlib import Path

from agentab import workers
from agentab.layout import SYNTHESIS_FILES, ResultsFolder
from agentab.synthesis.families import behaviour_work
from agentab.synthesis.figures.figure import render_figure
from agentab.synthesis.figures.frontier_figure import render_frontier
from agentab.synthesis.frontier import frontier, frontier_work
from agentab.synthesis.pass_k import pass_k_work
from agentab.synthesis.prose import render_markdown
from agentab.synthesis.runs.results import load_frozen_scenario, missing_runs, read_all_runs
from agentab.synthesis.tables import (
    current_stamp,
    previous_stamp,
    stamp_change_warning,
    write_gaps_table,
    write_run_tables,
)
from agentab.synthesis.verdicts import (
    ScoredValues,
    SynthesisResult,
    compute_cell_values,
    decide_metric_types,
    gap_work,
)
from agentab.synthesis.wave_verdicts import sequential_gaps
from agentab.synthesis.waves import (
    design_of,
    read_looks,
    record_look,
    replay_if_sequential,
    runs_per_cell,
)

# The outputs in the order they are written: the tables and the figure, the report last.
WRITE_ORDER = SYNTHESIS_FILES[1:] + SYNTHESIS_FILES[:1]


def synthesize(results_dir: Path, look: bool = True) -> SynthesisResult:
    """Rebuild every output of a results folder from its frozen scenario and measures files.
    `look=False`: not recorded as a look (the workflow's own synthesis of a folder some runs
    of which faulted: the runs planned are unchanged, and nobody chose to read it early)."""
    results_dir = Path(results_dir)
    scenario = load_frozen_scenario(results_dir)
    runs, bad_files, present = read_all_runs(results_dir, scenario)
    scored = ScoredValues.of(runs, scenario.metrics)
    types = decide_metric_types(scored, scenario)
    cell_values = compute_cell_values(scored, scenario, types)
    plan = replay_if_sequential(results_dir, scenario, runs, types)
    given = None if plan is None else plan.runs_given_by_cell(scenario.cells)
    result = SynthesisResult(
        results_dir=results_dir,
        scenario_name=scenario.name,
        outputs=output_paths(results_dir),
        runs=runs,
        metric_types=types,
        cell_values=cell_values,
        gaps=[],
        missing=missing_runs(results_dir, scenario, present, given),
        bad_files=bad_files,
        waves=plan,
        # A fixed-n verdict is valid for one look: each synthesis that could be read is one
        # (a sequential scenario's looks keep its design: its bets are sized for it).
        looks=record_look(results_dir, runs_per_cell(runs, scenario), design_of(scenario))
        if look
        else read_looks(results_dir),
    )
    behaviour, result.behaviour_values = behaviour_work(runs, scenario)
    # Everything resampled, on the processor's cores.
    result.gaps, result.pass_k, result.memo["frontier"], result.behaviour = workers.run_all(
        [
            gap_work(scored, scenario, types, cell_values),
            pass_k_work(scored, scenario, types),
            frontier_work(result, scenario, scored),
            behaviour,
        ]
    )
    if plan is not None:
        result.gaps = sequential_gaps(result.gaps, plan)
    result.memo["stamp_change"] = stamp_change_warning(
        previous_stamp(result.outputs["gaps.csv"]), current_stamp()
    )
    write_outputs(result, scenario)
    return result


def output_paths(out: Path) -> dict[str, Path]:
    folder = ResultsFolder(Path(out))
    return {name: folder.output(name) for name in WRITE_ORDER}


def write_outputs(result: SynthesisResult, scenario) -> None:
    """cells.csv, measures.csv, gaps.csv, the figures and the report."""
    write_run_tables(result, scenario)
    write_gaps_table(result)
    render_figure(result, result.outputs["gaps.svg"])
    render_frontier(frontier(result, scenario), result.outputs["frontier.svg"])
    result.outputs["synthesis.md"].write_text(render_markdown(result, scenario), encoding="utf-8")
