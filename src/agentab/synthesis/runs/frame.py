"""A results folder's runs as a pandas DataFrame, for analyses the synthesis does not make
(`agentab.read_results`, docs/api.md).

A row per run and metric, read by the synthesis's own reader (`results.read_runs`), so a run
counts here as it counts in the synthesis: the same statuses, the same runs left out. Besides
the contract's metrics and the extras a validator returned, every run's built-in measures
(turns, tokens, cost, wall time, …) are rows too, failed runs' included.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas

from agentab.scenario.usage_names import USED_METRIC
from agentab.synthesis.runs.results import RunRecord, load_frozen_scenario, read_runs

COLUMNS = ["cell", "task", "rep", "run", "status", "metric", "role", "value", "pending"]
# A built-in measure that is a value, not a structure: what a row can hold.
SCALAR = (bool, int, float, str, type(None))


def read_results(folder: Path | str) -> pandas.DataFrame:
    """Every run of a results folder, a row per run and metric (`COLUMNS`; docs/api.md).

    `role` says where a value comes from: `contract` (a metric of `[validation].metrics`, a row
    for every run, its value None when the run has none), `extra` (a validator's metric outside
    the contract) or `builtin` (measured from the run's own files). A measures.json the
    synthesis cannot read is left out with a warning naming it, as `agentab synthesize` does;
    runs not made yet have no rows. Raises AgentabError for a folder without its frozen
    scenario, or with a file a newer agentab wrote."""
    folder = Path(folder)
    scenario = load_frozen_scenario(folder)
    runs, bad_files = read_runs(folder, scenario)
    for bad in bad_files:
        warnings.warn(f"{folder / bad.path} {bad.message}: its run is left out", stacklevel=2)
    rows = [row for run in runs for row in run_rows(run, scenario.metrics)]
    return pandas.DataFrame(rows, columns=COLUMNS)


def run_rows(run: RunRecord, contract: list[str]) -> list[tuple]:
    head = (run.cell, run.task, run.rep, run.run, run.status)
    rows = [
        (*head, metric, "contract", run.metrics.get(metric), metric in run.pending)
        for metric in contract
    ]
    rows += [(*head, metric, "extra", run.extra[metric], False) for metric in sorted(run.extra)]
    rows += [(*head, metric, "builtin", value, False) for metric, value in builtin_rows(run)]
    return rows


def builtin_rows(run: RunRecord) -> list[tuple[str, object]]:
    """(metric, value) of each built-in measure that is a value, by name, and each brick's use as
    `bricks_used.<brick>` (the name a contract scores it under); the structures (`brick_usage`,
    `brick_calls`) stay in measures.json."""
    builtin = run.builtin or {}
    found = [(name, value) for name, value in builtin.items() if isinstance(value, SCALAR)]
    used = builtin.get("bricks_used")
    if isinstance(used, dict):
        found += [(f"{USED_METRIC}{brick}", value) for brick, value in used.items()]
    return sorted(found, key=lambda item: item[0])
