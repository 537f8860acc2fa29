"""measures.csv, a line per run and metric: what each run scored, as its measures.json says.

It needs no statistics (no numpy): the process that reads the measures files ahead writes it
from the runs it read while the synthesis computes (`agentab synthesize`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from agentab.layout import ResultsFolder
from agentab.synthesis.runs.read_ahead import MeasuresFile
from agentab.synthesis.runs.results import RunRecord, load_frozen_scenario, read_all_runs

MEASURES_COLUMNS = ["cell", "rep", "run", "status", "metric", "role", "value", "pending"]

NEEDS_QUOTES = re.compile(r'[,"\r\n]')


def csv_field(text: str) -> str:
    """One field, quoted as the csv module quotes it (a quote doubled), and also when it holds a
    carriage return, which the csv module leaves bare and a reader then takes for a line end."""
    if NEEDS_QUOTES.search(text):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_line(fields) -> str:
    return ",".join(map(csv_field, fields)) + "\n"


def json_text(value) -> str:
    """A value as JSON text, so that `true`, `6` and `"6"` stay distinct in measures.csv."""
    # The common scalars directly: json.dumps per value is most of the time of a large table.
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float and math.isfinite(value):
        return repr(value)  # what json.dumps writes for a finite float
    return json.dumps(value, sort_keys=True)


def value_field(value) -> str:
    """csv_field(json_text(value)); a boolean, an integer or a finite float directly, as they
    need no quotes: 100 000 fields in a large table."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is float and math.isfinite(value):
        return repr(value)
    return csv_field(json_text(value))


def measures_lines(runs: list[RunRecord], contract: list[str]) -> list[str]:
    """measures.csv, a line per run and metric: every contract metric (empty when absent), then
    the extras.

    100 000 rows at 10 000 runs: a run's first four fields and each metric's name are quoted
    once, not once per row.
    """
    lines = [csv_line(MEASURES_COLUMNS)]
    middles = [(metric, f",{csv_field(metric)},contract,") for metric in contract]
    for run in runs:
        head = ",".join(csv_field(text) for text in (run.cell, str(run.rep), run.run, run.status))
        metrics, pending = run.metrics, run.pending
        if pending:
            lines += [
                f"{head}{middle}{value_field(metrics[metric]) if metric in metrics else ''},"
                f"{'true' if metric in pending else 'false'}\n"
                for metric, middle in middles
            ]
        else:  # most runs: no metric waits for a person
            lines += [
                f"{head}{middle}{value_field(metrics[metric]) if metric in metrics else ''},false\n"
                for metric, middle in middles
            ]
        if run.extra:
            lines += [
                f"{head},{csv_field(metric)},extra,{csv_field(json_text(run.extra[metric]))},false\n"
                for metric in sorted(run.extra)
            ]
    return lines


def write_measures_table(path: Path, runs: list[RunRecord], contract: list[str]) -> None:
    Path(path).write_text("".join(measures_lines(runs, contract)), encoding="utf-8")


def write_from_files(results_dir: Path, files: list[MeasuresFile]) -> None:
    """measures.csv of a results folder from its measures files as `read_ahead` read them:
    the runs the synthesis reads from the same bytes, by the same code."""
    scenario = load_frozen_scenario(results_dir)
    runs, _, _ = read_all_runs(Path(results_dir), scenario, files)
    write_measures_table(
        ResultsFolder(Path(results_dir)).output("measures.csv"), runs, scenario.metrics
    )
