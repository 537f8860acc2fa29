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
    return _JSON_TEXT(value)


# json.dumps(value, sort_keys=True), its encoder made once rather than once a value.
_JSON_TEXT = json.JSONEncoder(sort_keys=True).encode


def measures_lines(runs: list[RunRecord], contract: list[str]) -> list[str]:
    """measures.csv, a line per run and metric: every contract metric (empty when absent), then
    the extras."""
    lines = [csv_line(MEASURES_COLUMNS)]
    names = [(metric, csv_field(metric)) for metric in contract]
    for run in runs:
        head = ",".join(map(csv_field, (run.cell, str(run.rep), run.run, run.status)))
        for metric, name in names:
            value = csv_field(json_text(run.metrics[metric])) if metric in run.metrics else ""
            pending = "true" if metric in run.pending else "false"
            lines.append(f"{head},{name},contract,{value},{pending}\n")
        for metric in sorted(run.extra):
            value = csv_field(json_text(run.extra[metric]))
            lines.append(f"{head},{csv_field(metric)},extra,{value},false\n")
    return lines


def write_measures_table(path: Path, runs: list[RunRecord], contract: list[str]) -> None:
    Path(path).write_text("".join(measures_lines(runs, contract)), encoding="utf-8")
