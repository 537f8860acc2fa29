"""What people ask of the results, as synthesis.md and the report write it (docs/synthesis.md):
can the judge be trusted (`judge_agreement`), what does a cell cost for what it scores
(`frontier`), and which tasks got worse (`task_directions`).
"""

from __future__ import annotations

from agentab.synthesis.frontier import frontier
from agentab.synthesis.judge_agreement import JudgeAgreement, judge_agreements
from agentab.synthesis.task_directions import against_line
from agentab.synthesis.verdicts import SynthesisResult
from agentab.synthesis.wording import p_text, percent, signed, signed_interval


def questions_context(result: SynthesisResult, scenario) -> dict:
    """The keys the templates read: `judge_people`, `frontier`, `tasks_against`."""
    return {
        "judge_people": [judge_view(item) for item in judge_agreements(result, scenario)],
        "frontier": frontier(result, scenario),
        "tasks_against": against_line(result.gaps),
    }


def judge_view(found: JudgeAgreement) -> dict:
    table = found.table
    return {
        "form": found.form,
        "judge_metric": found.judge_metric,
        "person_metric": found.person_metric,
        "sample": found.sample,
        "table": table,
        "agreement": f"{table.agreed} of {table.n} ({percent(table.agreed / table.n)})"
        if table.n
        else "",
        "kappa": kappa_text(found),
        "rates": [
            {
                "rate": rate,
                "judge": percent(rate.judge_rate) if rate.judge_rate is not None else "—",
                "corrected": percent(rate.value) if rate.value is not None else rate.note,
                "interval": f"[{percent(rate.low)}, {percent(rate.high)}]"
                if rate.value is not None
                else "—",
            }
            for rate in found.rates
        ],
        "gaps": [
            {
                "gap": gap,
                "judge": (
                    f"{signed(gap.judge_gap.verdict.gap)} ({gap.judge_gap.verdict_text})"
                    if gap.judge_gap
                    else "—"
                ),
                "corrected": signed(gap.verdict.gap),
                "interval": signed_interval(gap.verdict.ci_low, gap.verdict.ci_high),
                "p": p_text(gap.verdict.p),
            }
            for gap in found.gaps
        ],
    }


def kappa_text(found: JudgeAgreement) -> str:
    """κ = 0.33, 95% interval [−0.10, 0.71]; or why there is none."""
    if not found.table.n:
        return ""
    if found.kappa is None:
        return (
            "κ is undefined: the person and the judge each gave one answer to every labelled run, "
            "so chance alone would agree as often"
        )
    text = f"Cohen's κ = {found.kappa:.2f}"
    if found.kappa_interval:
        low, high = found.kappa_interval
        text += f", 95% interval [{low:.2f}, {high:.2f}]"
    return text.replace("-", "−")
