"""The stamp of a synthesis: how its verdicts were drawn, and by which agentab.

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

# draws-2: the exact-law bootstrap (10 000 draws, seed 20250101), stratified shuffles over
# tasks, and the bound of each established gap by its cells' invalid and failed runs.
DRAW_METHOD = "draws-2"
COLUMNS = ["method", "agentab"]


def agentab_version() -> str:
    try:
        return metadata.version("agentab")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def current() -> tuple[str, str]:
    return DRAW_METHOD, agentab_version()


def previous(gaps_csv: Path) -> tuple[str, str] | None:
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


def change_warning(before: tuple[str, str] | None, now: tuple[str, str]) -> str:
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
