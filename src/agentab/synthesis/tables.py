"""The tables of a synthesis: cells.csv, gaps.csv and measures.csv.

Every number is written at full precision (repr), so that a reader can recompute every figure,
and the same inputs give the same bytes.
"""

from __future__ import annotations

from pathlib import Path

from agentab.synthesis import stamp
from agentab.synthesis.runs.measures_table import (  # noqa: F401  (its names, importable here)
    MEASURES_COLUMNS,
    csv_field,
    csv_line,
    json_text,
    measures_lines,
    write_measures_table,
)
from agentab.synthesis.verdicts import CellValue, Gap, SynthesisResult

CELLS_COLUMNS = [
    "cell", "task", "metric", "type", "n", "k", "value",
    "dispersion", "dispersion_low", "dispersion_high", "pending", "note",
]  # fmt: skip
GAPS_COLUMNS = [
    "cell", "task", "reference", "metric", "n_cell", "n_ref", "value_cell", "value_ref",
    "gap", "ci_low", "ci_high", "p", "p_holm", "verdict", *stamp.COLUMNS,
]  # fmt: skip


def csv_number(value) -> str:
    """Full precision (repr) so that a reader can recompute every figure; empty when absent."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def csv_value(value) -> str:
    """csv_field(csv_number(value)), a float, an int or nothing directly: they need no quotes
    (26 000 fields in gaps.csv with five tasks)."""
    kind = type(value)
    if kind is float:
        return repr(value)
    if value is None:
        return ""
    if kind is int:
        return str(value)
    return csv_field(csv_number(value))


def write_csv(path: Path, columns: list[str], rows: list[list]) -> None:
    lines = [csv_line(columns)] + [",".join(map(csv_value, row)) + "\n" for row in rows]
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
    method, version = stamp.current()
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
            method,
            version,
        ]
        for gap in gaps
    ]


def write_run_tables(result: SynthesisResult, scenario, measures: bool = True) -> None:
    """cells.csv and measures.csv (`measures`: unless it is written elsewhere): they do not
    depend on any verdict."""
    write_csv(result.outputs["cells.csv"], CELLS_COLUMNS, cells_rows(result.cell_values))
    if measures:
        write_measures_table(result.outputs["measures.csv"], result.runs, scenario.metrics)


def write_gaps_table(result: SynthesisResult) -> None:
    """gaps.csv: one row per gap, with its verdict."""
    # Each rate's pass^k gaps after every other (a metric named `<rate> pass^<k>`).
    write_csv(result.outputs["gaps.csv"], GAPS_COLUMNS, gaps_rows(result.gaps + result.pass_k))
