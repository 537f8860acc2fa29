"""The tables of a synthesis: cells.csv, gaps.csv and measures.csv.

Every number is written at full precision (repr), so that a reader can recompute every figure,
and the same inputs give the same bytes.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from agentab.results import RunRecord
from agentab.verdicts import CellValue, Gap, SynthesisResult

CELLS_COLUMNS = [
    "cell", "metric", "type", "n", "k", "value",
    "dispersion", "dispersion_low", "dispersion_high", "pending", "note",
]  # fmt: skip
GAPS_COLUMNS = [
    "cell", "reference", "metric", "n_cell", "n_ref", "value_cell", "value_ref",
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


def write_csv(path: Path, columns: list[str], rows: list[list]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_number(value) for value in row])
    path.write_text(buffer.getvalue(), encoding="utf-8")


def write_text_csv(path: Path, columns: list[str], rows: list[list[str]]) -> None:
    """`write_csv` for rows that are already text."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")


def cells_rows(cell_values: list[CellValue]) -> list[list]:
    rows = []
    for row in cell_values:
        agg = row.aggregate
        rows.append(
            [
                row.cell,
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
    return [
        [
            gap.cell,
            gap.reference,
            gap.metric,
            gap.n_cell,
            gap.n_ref,
            gap.value_cell,
            gap.value_ref,
            gap.verdict.gap,
            gap.verdict.ci_low,
            gap.verdict.ci_high,
            gap.verdict.p,
            gap.p_holm,
            gap.verdict.verdict,
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


def measures_rows(runs: list[RunRecord], contract: list[str]) -> list[list[str]]:
    """One row per run and metric: every contract metric (empty when absent), then the extras.

    The rows are already text, as they appear in measures.csv.
    """
    rows = []
    for run in runs:
        head = [run.cell, str(run.rep), run.run, run.status]
        metrics, pending = run.metrics, run.pending
        for metric in contract:
            value = json_text(metrics[metric]) if metric in metrics else ""
            flag = "true" if metric in pending else "false"
            rows.append([*head, metric, "contract", value, flag])
        for metric in sorted(run.extra):
            rows.append([*head, metric, "extra", json_text(run.extra[metric]), "false"])
    return rows


def write_run_tables(result: SynthesisResult, scenario) -> None:
    """cells.csv and measures.csv: they do not depend on any verdict."""
    write_csv(result.outputs["cells.csv"], CELLS_COLUMNS, cells_rows(result.cell_values))
    write_text_csv(
        result.outputs["measures.csv"],
        MEASURES_COLUMNS,
        measures_rows(result.runs, scenario.metrics),
    )


def write_gaps_table(result: SynthesisResult) -> None:
    """gaps.csv: one row per gap, with its verdict."""
    write_csv(result.outputs["gaps.csv"], GAPS_COLUMNS, gaps_rows(result.gaps))
