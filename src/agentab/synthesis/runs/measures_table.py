"""measures.csv, a line per run and metric: what each run scored, as its measures.json says."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentab.synthesis.runs.results import RunRecord

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
    return json.dumps(value, sort_keys=True)


def measures_lines(runs: list[RunRecord], contract: list[str]) -> list[str]:
    """measures.csv, a line per run and metric: every contract metric (empty when absent), then
    the extras."""
    lines = [csv_line(MEASURES_COLUMNS)]
    for run in runs:
        head = [run.cell, str(run.rep), run.run, run.status]
        for metric in contract:
            value = json_text(run.metrics[metric]) if metric in run.metrics else ""
            pending = "true" if metric in run.pending else "false"
            lines.append(csv_line([*head, metric, "contract", value, pending]))
        for metric in sorted(run.extra):
            lines.append(csv_line([*head, metric, "extra", json_text(run.extra[metric]), "false"]))
    return lines


def write_measures_table(path: Path, runs: list[RunRecord], contract: list[str]) -> None:
    Path(path).write_text("".join(measures_lines(runs, contract)), encoding="utf-8")
