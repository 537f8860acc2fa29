"""The tables of a synthesis: cells.csv, gaps.csv and measures.csv, and the stamp of its verdicts.

Every number is written at full precision (repr), so that a reader can recompute every figure,
and the same inputs give the same bytes.

## The stamp

A verdict is a function of the runs and of the method that resamples them. The runs are kept,
so the verdict can be rebuilt; but if the method changes between two syntheses of the same
folder (a new agentab that draws differently), a gap can change state with no run changed.
Every row of gaps.csv and synthesis.md therefore name the method and agentab's version, and a
synthesis that replaces one made with another method or version says so.

`DRAW_METHOD` names the algorithm, not the code: it changes when any verdict of any folder
could change (the seed, the number of draws, how a group is resampled, the tasks' shuffles,
the unscored runs' bound), and only then (docs/synthesis.md says what each method is).
"""

from __future__ import annotations

import csv
from importlib import metadata
from pathlib import Path

from agentab.synthesis.runs.measures_table import (  # noqa: F401  (its names, importable here)
    MEASURES_COLUMNS,
    csv_field,
    csv_line,
    json_text,
    measures_lines,
    write_measures_table,
)
from agentab.synthesis.verdicts import CellValue, Gap, SynthesisResult

# draws-2: the bootstrap from each group's exact distribution (10 000 draws, seed 20250101),
# stratified shuffles over tasks, and the bound of each established gap by its cells' invalid and failed runs.
DRAW_METHOD = "draws-2"
STAMP_COLUMNS = ["method", "agentab"]

CELLS_COLUMNS = [
    "cell", "task", "metric", "type", "n", "k", "value",
    "dispersion", "dispersion_low", "dispersion_high", "pending", "note",
]  # fmt: skip
GAPS_COLUMNS = [
    "cell", "task", "reference", "metric", "n_cell", "n_ref", "value_cell", "value_ref",
    "gap", "ci_low", "ci_high", "p", "p_holm", "verdict", *STAMP_COLUMNS,
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


def write_csv(path: Path, columns: list[str], rows: list[list]) -> None:
    fields = [[csv_field(csv_number(value)) for value in row] for row in rows]
    lines = [csv_line(columns)] + [",".join(row) + "\n" for row in fields]
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
    method, version = current_stamp()
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


def write_run_tables(result: SynthesisResult, scenario) -> None:
    """cells.csv and measures.csv: they depend on no verdict."""
    rows = cells_rows(result.cell_values + result.behaviour_values)
    write_csv(result.outputs["cells.csv"], CELLS_COLUMNS, rows)
    write_measures_table(result.outputs["measures.csv"], result.runs, scenario.metrics)


def write_gaps_table(result: SynthesisResult) -> None:
    """gaps.csv: one row per gap, with its verdict."""
    # Each rate's pass^k gaps after every other (a metric named `<rate> pass^<k>`).
    write_csv(
        result.outputs["gaps.csv"],
        GAPS_COLUMNS,
        gaps_rows(result.gaps + result.pass_k + result.behaviour),
    )


def agentab_version() -> str:
    try:
        return metadata.version("agentab")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def current_stamp() -> tuple[str, str]:
    return DRAW_METHOD, agentab_version()


def previous_stamp(gaps_csv: Path) -> tuple[str, str] | None:
    """(method, version) of the gaps.csv a synthesis is about to replace; ("", "") for one
    written before the stamp; None when there is none, or it has no row."""
    try:
        with Path(gaps_csv).open(newline="", encoding="utf-8") as handle:
            row = next(csv.DictReader(handle), None)
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if row is None:
        return None
    return row.get("method") or "", row.get("agentab") or ""


def stamp_change_warning(before: tuple[str, str] | None, now: tuple[str, str]) -> str:
    """What a reader must know when this synthesis replaces one stamped otherwise; "" if not."""
    if before is None or before == now:
        return ""
    was = (
        f"method `{before[0]}`, agentab {before[1]}"
        if before[0]
        else "an agentab that did not stamp its method"
    )
    if before[0] == now[0]:
        return (
            f"this synthesis replaces one made by agentab {before[1]} with the same draw method "
            f"(`{now[0]}`): its verdicts are drawn alike"
        )
    return (
        f"this synthesis replaces one made with {was}; its verdicts are drawn with method "
        f"`{now[0]}` (agentab {now[1]}), and a gap may have changed state with no run changed "
        "(docs/synthesis.md#the-stamp)"
    )
