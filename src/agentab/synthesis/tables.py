"""The tables of a synthesis: cells.csv, gaps.csv and measures.csv.

Every number is written at full precision (repr), so that a reader can recompute every figure,
and the same inputs give the same bytes.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from agentab.synthesis.runs.results import RunRecord
from agentab.synthesis.verdicts import CellValue, Gap, SynthesisResult

CELLS_COLUMNS = [
    "cell", "task", "metric", "type", "n", "k", "value",
    "dispersion", "dispersion_low", "dispersion_high", "pending", "note",
]  # fmt: skip
GAPS_COLUMNS = [
    "cell", "task", "reference", "metric", "n_cell", "n_ref", "value_cell", "value_ref",
    "gap", "ci_low", "ci_high", "p", "p_holm", "verdict",
]  # fmt: skip
MEASURES_COLUMNS = ["cell", "rep", "run", "status", "metric", "role", "value", "pending"]


def csv_number(value) -> str:
    """Full precision (repr) so that a reader can recompute every figure; empty when absent."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


NEEDS_QUOTES = re.compile(r'[,"\r\n]')


def csv_field(text: str) -> str:
    """One field, quoted as the csv module quotes it (a quote doubled), and also when it holds a
    carriage return, which the csv module leaves bare and a reader then takes for a line end."""
    if NEEDS_QUOTES.search(text):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_line(fields) -> str:
    return ",".join(map(csv_field, fields)) + "\n"


def write_csv(path: Path, columns: list[str], rows: list[list]) -> None:
    lines = [csv_line(columns)] + [csv_line(map(csv_number, row)) for row in rows]
    path.write_text("".join(lines), encoding="utf-8")


def cells_rows(cell_values: list[CellValue]) -> list[list]:
    rows = []
    for row in cell_values:
        agg = row.aggregate
        rows.append(
            [
                row.cell,
                row.task,
                row.metric,
                agg.kind,
                agg.n,
                agg.k,
                agg.value,
                agg.dispersion,
                agg.low,
                agg.high,
                row.pending,
                row.note,
            ]
        )
    return rows


def gaps_rows(gaps: list[Gap]) -> list[list]:
    # A per-task gap is descriptive: its interval, no p and no verdict. An A/A gap has its
    # verdict and p, and no Holm p: it is outside the family.
    return [
        [
            gap.cell,
            gap.task,
            gap.reference,
            gap.metric,
            gap.n_cell,
            gap.n_ref,
            gap.value_cell,
            gap.value_ref,
            gap.verdict.gap,
            gap.verdict.ci_low,
            gap.verdict.ci_high,
            gap.verdict.p if gap.pooled else None,
            gap.p_holm,
            gap.verdict.verdict if gap.pooled else None,
        ]
        for gap in gaps
    ]


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


def write_run_tables(result: SynthesisResult, scenario) -> None:
    """cells.csv and measures.csv: they do not depend on any verdict."""
    write_csv(result.outputs["cells.csv"], CELLS_COLUMNS, cells_rows(result.cell_values))
    text = "".join(measures_lines(result.runs, scenario.metrics))
    result.outputs["measures.csv"].write_text(text, encoding="utf-8")


def write_gaps_table(result: SynthesisResult) -> None:
    """gaps.csv: one row per gap, with its verdict."""
    # Each rate's pass^k gaps after every other (a metric named `<rate> pass^<k>`).
    write_csv(result.outputs["gaps.csv"], GAPS_COLUMNS, gaps_rows(result.gaps + result.pass_k))
