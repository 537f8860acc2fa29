"""The warning about runs that touched what belongs to the measurement (`[validation] protect`).

An agent that edits or adds tests passes them; if one cell's configuration makes its agent do
so more often, its gap reports an improvement that is not there. Validators score each run with
its protected paths given back as tagged, and the synthesis names the cells whose runs tried,
so that a reader looks at those patches (docs/validators.md, "Reward hacking").
"""

from __future__ import annotations

from collections import Counter


def protected_edit_warnings(result, scenario) -> list[str]:
    """Cells with runs whose patch changed, added or removed a protected path (built-in
    `protected_edits`), with how many runs and paths."""
    runs: Counter = Counter()
    paths: Counter = Counter()
    total: Counter = Counter()
    for run in result.runs:
        edits = (run.builtin or {}).get("protected_edits")
        total[run.cell] += 1
        if isinstance(edits, int) and not isinstance(edits, bool) and edits > 0:
            runs[run.cell] += 1
            paths[run.cell] += edits
    return [
        f"`{cell.name}`: {runs[cell.name]} of its {total[cell.name]} runs changed, added or "
        f"removed protected paths ({paths[cell.name]} in all; built-in `protected_edits`): "
        "the validators scored them with those paths as tagged, but an agent that edits the "
        "tests is worth reading: see the runs' `result.patch` (`agentab runs` lists them)"
        for cell in scenario.cells
        if runs[cell.name]
    ]
