"""A sequential scenario's verdicts and what its synthesis says about the waves.

Each pooled gap's verdict is read from its confidence sequence (`sequential`, replayed wave by
wave by `waves.replay_waves`) instead of the fixed-n rule: established iff the sequence has
excluded 0 at some wave; its interval is the sequence after the gap's last look; its p the
anytime-valid one. Holm is taken again over the family with those p. Per-task gaps stay
descriptive, as with the fixed rule.
"""

from __future__ import annotations

import dataclasses

from agentab import stats
from agentab.metrics import RATE
from agentab.synthesis.verdicts import Gap

SIGN_SCALE = "P(cell > reference) − P(cell < reference)"


def sequential_gaps(gaps: list[Gap], plan) -> list[Gap]:
    """The gaps with their verdicts from the sequences of `plan`, Holm over each family."""
    judged = []
    for gap in gaps:
        path = plan.paths.get((gap.cell, gap.metric)) if gap.pooled else None
        if path is None or path.last is None:
            judged.append(gap)
            continue
        look = path.last
        bounded = plan.bounded.get((gap.cell, gap.metric))
        holds = bounded is None or holds_on_its_side(path, bounded)
        verdict = stats.GapVerdict(
            gap=gap.verdict.gap,
            ci_low=look.low,
            ci_high=look.high,
            p=look.p,
            verdict=stats.ESTABLISHED if path.established and holds else stats.INCONCLUSIVE,
        )
        note = "" if holds else BOUND_NOTE
        judged.append(dataclasses.replace(gap, verdict=verdict, sequence=path, note=note))
    for calibration in (False, True):
        family = [
            i for i, gap in enumerate(judged) if gap.pooled and gap.calibration == calibration
        ]
        adjusted = stats.holm([judged[i].verdict.p for i in family])
        for i, p in zip(family, adjusted, strict=True):
            judged[i] = dataclasses.replace(judged[i], p_holm=p)
    return judged


BOUND_NOTE = (
    "its sequence excludes 0 on the scored runs, but not with the invalid or failed runs of the "
    "two cells counted against it: runs that left the denominator could have made it"
)


def holds_on_its_side(path, bounded) -> bool:
    """The bounded sequence is established, on the side of zero the gap's is."""
    if not bounded.established:
        return False
    above, look = path.last.low > 0, bounded.looks[bounded.decided_at - 1]
    return look.low > 0 if above else look.high < 0


def sequence_scale(gap: Gap) -> str:
    """What a gap's sequence is an interval for."""
    return "the difference of the rates, over paired runs" if gap.kind == RATE else SIGN_SCALE


def mean_cost(runs, cell: str) -> float | None:
    """A cell's mean cost per run over its runs that state one; None when none does."""
    costs = [
        run.provenance["cost_usd"]
        for run in runs
        if run.cell == cell
        and isinstance(run.provenance.get("cost_usd"), int | float)
        # The offline model costs nothing, unless its policy sets a price (as `usage_totals`).
        and (run.provenance.get("provider") != "offline" or run.provenance["cost_usd"] > 0)
    ]
    return sum(costs) / len(costs) if costs else None


def stopping_rows(result, scenario) -> list[dict]:
    """A row per cell: its waves and runs of the maximum, the waves its gaps were decided at,
    and the runs (and money) not spent against the maximum."""
    plan = result.waves
    tasks = max(1, len(scenario.tasks))
    rows = []
    for cell in scenario.cells:
        waves = plan.given.get(cell.name, 0)
        saved = (scenario.repetitions - waves * plan.wave) * tasks
        cost = mean_cost(result.runs, cell.name)
        decided = [
            f"`{metric}` at wave {path.decided_at}"
            for (name, metric), path in sorted(plan.paths.items())
            if name == cell.name and path.established
        ]
        rows.append(
            {
                "cell": cell.name,
                "is_reference": cell.name == scenario.reference,
                "waves": f"{waves} of {plan.most}",
                "runs": f"{waves * plan.wave * tasks} of {scenario.repetitions * tasks}",
                "decided": ", ".join(decided) or "—",
                "saved_runs": saved,
                "saved_usd": None if cost is None else saved * cost,
            }
        )
    return rows


def stopping_context(result, scenario) -> dict | None:
    """What the template's stopping section needs; None for a fixed scenario."""
    if result.waves is None:
        return None
    rows = stopping_rows(result, scenario)
    priced = [row["saved_usd"] for row in rows if row["saved_usd"] is not None]
    return {
        "wave": result.waves.wave,
        "most": result.waves.most,
        "rows": rows,
        "saved_runs": sum(row["saved_runs"] for row in rows),
        "saved_usd": f"{sum(priced):.2f}" if priced else None,
        "decide": scenario.decide,
    }
