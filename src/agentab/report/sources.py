"""What the report reads from the synthesis: the one place this package imports it.

The report is built from the same files as the synthesis (the frozen scenario and the
measures.json files), and it computes the gaps the way `synthesize()` does: the same fixed
seed, so the same verdicts. Nothing is written here.
"""

from __future__ import annotations

from pathlib import Path

from agentab import workers
from agentab.synthesis.families import behaviour_work
from agentab.synthesis.prose import report_context
from agentab.synthesis.runs.results import (
    MEASURES_FILE,
    NOT_STARTED,
    STATUSES,
    BadFile,
    MissingRun,
    RunRecord,
    load_frozen_scenario,
    missing_runs,
    not_started_reason,
    read_runs,
)
from agentab.synthesis.synthesize import output_paths
from agentab.synthesis.task_directions import marked_task_rows
from agentab.synthesis.verdicts import (
    PENDING_NOTE,
    ScoredValues,
    SynthesisResult,
    compute_cell_values,
    compute_gaps,
    decide_metric_types,
)
from agentab.synthesis.wave_verdicts import sequential_gaps
from agentab.synthesis.waves import read_looks, replay_if_sequential, replay_results

__all__ = [
    "MEASURES_FILE",
    "NOT_STARTED",
    "PENDING_NOTE",
    "STATUSES",
    "BadFile",
    "MissingRun",
    "RunRecord",
    "load_frozen_scenario",
    "marked_task_rows",
    "missing_runs",
    "not_started_reason",
    "read_runs",
    "runs_given",
    "synthesis_context",
    "synthesis_outputs",
]


def runs_given(results_dir: Path, scenario) -> dict[str, int] | None:
    """With sequential stopping, each cell's runs (per task) of the waves it was given, as the
    synthesis replays them; None for a fixed scenario (every cell runs `repetitions`)."""
    if not scenario.sequential:
        return None
    return replay_results(Path(results_dir), scenario).runs_given_by_cell(scenario.cells)


def synthesis_outputs(results_dir: Path) -> list[Path]:
    """The files `agentab synthesize` writes in a results folder."""
    return list(output_paths(Path(results_dir)).values())


def synthesis_context(
    results_dir: Path, scenario, runs: list[RunRecord], bad_files: list[BadFile]
) -> dict:
    """The synthesis, computed as `synthesize()` computes it, as its template sees it.

    `runs` and `bad_files` are what `read_runs` gave. The keys the report uses: matrix, metrics, values, gaps, isolated, invalid, failed,
    pending, missing, bad_files, provenance, usage, counts, expected_runs, holm_level.
    """
    results_dir = Path(results_dir)
    present = {f"runs/{run.run}" for run in runs} | {
        bad.path.rpartition("/")[0] for bad in bad_files
    }
    scored = ScoredValues.of(runs, scenario.metrics)
    types = decide_metric_types(scored, scenario)
    cell_values = compute_cell_values(scored, scenario, types)
    plan = replay_if_sequential(results_dir, scenario, runs, types)  # as the synthesis does
    given = None if plan is None else plan.runs_given_by_cell(scenario.cells)
    gaps = compute_gaps(scored, scenario, types, cell_values)
    result = SynthesisResult(
        results_dir=results_dir,
        scenario_name=scenario.name,
        outputs={},
        runs=runs,
        metric_types=types,
        cell_values=cell_values,
        gaps=gaps if plan is None else sequential_gaps(gaps, plan),
        missing=missing_runs(results_dir, scenario, present, given),
        bad_files=bad_files,
        waves=plan,
        looks=read_looks(results_dir),
    )
    behaviour, result.behaviour_values = behaviour_work(runs, scenario)
    (result.behaviour,) = workers.run_all([behaviour])
    return report_context(result, scenario) | {"runs_given": given}
