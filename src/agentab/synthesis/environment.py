"""Warnings about the environment the agent worked in, not its treatment (docs/scenario.md,
`[etalon] setup`; docs/workflow.md, `builtin`).

Two things make a gap measure the machine instead of the brick: an agent whose tool calls
mostly failed (no interpreter, no test runner, a missing dependency), and runs of one scenario
that got different environments from the same setup (an unpinned dependency released between
two runs). Both are said at the top of the synthesis.
"""

from __future__ import annotations

from collections import Counter

from agentab.synthesis.runs.builtin import FAILED_CALLS_WARNING
from agentab.synthesis.runs.environment_diff import difference, read_environment
from agentab.synthesis.runs.tool_failures import most_failed
from agentab.synthesis.verdicts import SynthesisResult

SHOWN_RUNS = 3


def environment_warnings(result: SynthesisResult, scenario) -> list[str]:
    return failed_calls_warnings(result, scenario) + differing_environments(result)


def failed_calls_warnings(result: SynthesisResult, scenario) -> list[str]:
    """Cells where half of the tool calls or more failed (built-in `tool_errors`): the agent
    spent its run on an environment it could not use, whatever the cell's treatment. Exactly
    half counts: a run where every test command failed and every read succeeded is one."""
    calls: Counter = Counter()
    errors: Counter = Counter()
    runs_of: dict[str, list] = {}
    for run in result.runs:
        builtin = run.builtin or {}
        if isinstance(builtin.get("tool_calls"), int) and isinstance(
            builtin.get("tool_errors"), int
        ):
            calls[run.cell] += builtin["tool_calls"]
            errors[run.cell] += builtin["tool_errors"]
            runs_of.setdefault(run.cell, []).append(run)
    return [
        f"`{cell.name}`: {errors[cell.name]} of its {calls[cell.name]} tool calls failed "
        f"(built-in `tool_errors`): {share(errors[cell.name], calls[cell.name])}, so the "
        "environment the agent worked in, not its treatment, may be what is measured (a missing "
        "interpreter, test runner or dependency)" + failed_most(runs_of.get(cell.name, []))
        for cell in scenario.cells
        if calls[cell.name] and errors[cell.name] >= FAILED_CALLS_WARNING * calls[cell.name]
    ]


def share(errors: int, calls: int) -> str:
    return "half of them" if 2 * errors == calls else "more than half"


def failed_most(runs) -> str:
    """`; what failed most: `pytest -q` (6), `read setup.cfg` (2)`, when the runs kept it."""
    named = most_failed(runs)
    return f"; what failed most: {named}" if named else ""


def differing_environments(result: SynthesisResult) -> list[str]:
    """Runs whose setup made different environments (`environment.txt`, by its hash in the
    run's provenance): the most common one is taken as the scenario's; each other one is said
    with the cells and runs that got it and the packages in which it differs."""
    groups: dict[str, list] = {}
    for run in result.runs:
        digest = run.provenance.get("environment_sha256")
        if isinstance(digest, str):
            groups.setdefault(digest, []).append(run)
    if len(groups) < 2:
        return []
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[1][0].run))
    folder = getattr(result, "results_dir", None)
    common_digest, common = ordered[0]
    common_packages = read_environment(folder, common, common_digest)
    others = [
        (digest, runs, read_environment(folder, runs, digest)) for digest, runs in ordered[1:]
    ]
    # Only the etalon's own package differs: each task's commit installs its own version.
    others = [o for o in others if common_packages is None or o[2] != common_packages]
    warnings = []
    for _, runs, other in others:
        if common_packages is not None and other is not None:
            said = f": {difference(common_packages, other)}"
        else:
            said = " (an `environment.txt` that would tell how is missing or changed)"
        warnings.append(
            f"the runs got {len(others) + 1} different environments from the same setup: "
            f"{where(runs)} got another one than the {len(common)} runs of the most common"
            f"{said}; compare their `environment.txt` and pin the setup's versions (`pip install "
            "pkg==1.2.3`, a lock file), or the gaps may measure the difference"
        )
    return warnings


def where(runs) -> str:
    """`` `rule · off` (`runs/rule-off/r01`, `runs/rule-off/r02`) ``: the cells and their runs."""
    by_cell: dict[str, list] = {}
    for run in runs:
        by_cell.setdefault(run.cell, []).append(run)
    parts = []
    for cell, theirs in by_cell.items():
        shown = ", ".join(f"`runs/{run.run}`" for run in theirs[:SHOWN_RUNS])
        more = f" and {len(theirs) - SHOWN_RUNS} more" if len(theirs) > SHOWN_RUNS else ""
        parts.append(f"`{cell}` ({shown}{more})")
    return ", ".join(parts)
