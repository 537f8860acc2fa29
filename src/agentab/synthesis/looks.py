"""Looks under the fixed rule: each synthesis a person could have read, recorded, and the
warning once there were several.

The fixed rule is valid for one look at the number of runs planned. Reading the synthesis at
10 runs, raising `repetitions` and reading it again is a second look: stopping at the first
"established" of a look every 10 runs up to 50 calls about 12% of null gaps established, not 5%
(docs/synthesis.md). The results folder keeps `looks.json`: the runs per cell each synthesis
was written from, in order, one entry per distinct count (rebuilding the same synthesis is not
another look). A sequential scenario needs none of this, its sequences being valid at every
wave, as long as its design (wave and maximum, which its bets are sized for) stays as it was:
its looks record the design, and a change of it is warned of.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from agentab.files import write_json

LOOKS_FILE = "looks.json"


def runs_per_cell(runs, scenario) -> dict[str, int]:
    """The runs with measures of each cell (any status): what the synthesis was read from."""
    counted = Counter(run.cell for run in runs)
    return {cell.name: counted.get(cell.name, 0) for cell in scenario.cells}


def read_looks(results_dir: Path) -> list[dict]:
    """The looks recorded; [] when none or the file cannot be read (it is a record, not an input
    of any verdict)."""
    try:
        data = json.loads((Path(results_dir) / LOOKS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    looks = data.get("looks") if isinstance(data, dict) else None
    return [look for look in looks or [] if isinstance(look, dict)]


def record_look(results_dir: Path, runs: dict[str, int], design: dict | None = None) -> list[dict]:
    """Add this synthesis as a look unless the last one had the same runs per cell (and, for
    a sequential scenario, the same design: its wave and maximum)."""
    looks = read_looks(results_dir)
    entry = {"runs_per_cell": runs, **({"design": design} if design else {})}
    last = {key: looks[-1].get(key) for key in entry} if looks else None
    if last != entry:
        looks.append({"look": len(looks) + 1, **entry})
        write_json({"looks": looks}, Path(results_dir) / LOOKS_FILE)
    return looks


def design_of(scenario) -> dict | None:
    """A sequential scenario's design, what its bets were sized for; None for a fixed one."""
    if not scenario.sequential:
        return None
    return {"wave": scenario.wave, "repetitions": scenario.repetitions}


def design_warning(looks: list[dict]) -> list[str]:
    """A sequential design changed after earlier syntheses: its bets are sized for the maximum,
    so a maximum chosen after seeing runs is a choice made with the data."""
    designs = []
    for look in looks:
        design = look.get("design")
        if isinstance(design, dict) and design not in designs:
            designs.append(design)
    if len(designs) < 2:
        return []
    named = ", then ".join(
        f"waves of {d.get('wave')} up to {d.get('repetitions')}" for d in designs
    )
    return [
        f"the sequential design changed between syntheses of this results folder ({named}; "
        "`looks.json`): every decision is replayed under the design the scenario has now, but "
        "its sequences are sized for a maximum fixed before the runs were seen, and a maximum "
        "or a wave changed after a look can overstate their confidence. Keep wave and "
        "repetitions as they were, or run the new design in a results folder of its own"
    ]


def looks_warning(looks: list[dict]) -> list[str]:
    """The warning of a fixed-n verdict read after earlier looks (a sequential scenario's
    looks are what its rule is for: only a changed design is warned of)."""
    if any("design" in look for look in looks):
        return design_warning(looks)
    if len(looks) < 2:
        return []
    earlier = ", ".join(
        "/".join(str(n) for n in sorted(set((look.get("runs_per_cell") or {}).values())))
        for look in looks[:-1]
    )
    return [
        f"this synthesis is look {len(looks)} at this results folder: earlier syntheses were "
        f"written at {earlier} runs per cell (`looks.json`). Each verdict here is valid for one "
        "look at a number of runs fixed in advance; a fixed-n verdict read after several looks "
        "overstates its confidence (looked at every 10 runs up to 50 and stopped at the first "
        "established, about 12% of gaps with no effect are called established, not 5%). For an "
        'experiment read as it goes, use `[protocol] stopping = "sequential"` '
        "(docs/scenario.md#stopping-a-fixed-number-of-runs-or-waves)"
    ]
