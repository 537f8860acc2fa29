"""What people ask of the results, as synthesis.md and the report write it (docs/synthesis.md):
can the judge be trusted (`judge_agreement`), what does a cell cost for what it scores
(`frontier`), and which tasks got worse (`task_directions`).

And what the runs cannot say (`out_of_reach`): An inconclusive gap says nothing either way; but one kind of inconclusive gap says something
about the experiment itself. When a rate sits at 0% or at 100% in the reference and in a cell
alike, the gap between them could never have shown: a task out of the model's reach (a floor)
or one every run solves (a ceiling) measures nothing about the treatment. A reader told only
"no gap is established" takes that for an answer about the treatment; it is an answer about
the task.
"""

from __future__ import annotations

from agentab.metrics import RATE
from agentab.stats.strata import ALL
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


FLOOR, CEILING = 0.0, 1.0


def out_of_reach(result, scenario) -> list[str]:
    """A sentence per rate whose reference sits at a floor or a ceiling that some cells share."""
    values = {
        (row.cell, row.metric): row.aggregate
        for row in result.cell_values
        if row.task == ALL and row.aggregate.kind == RATE and row.aggregate.n
    }
    reference = scenario.reference
    sentences = []
    for metric in scenario.metrics:
        theirs = values.get((reference, metric))
        if theirs is None or theirs.value not in (FLOOR, CEILING):
            continue
        alike = [
            cell.name
            for cell in scenario.cells
            if cell.name != reference
            and not getattr(cell, "is_aa", False)  # the A/A copy is the reference again
            and (found := values.get((cell.name, metric))) is not None
            and found.value == theirs.value
        ]
        if not alike:
            continue
        cells = ", ".join(f"`{name}`" for name in alike)
        compared = [c for c in scenario.cells if not getattr(c, "is_aa", False)]
        every = len(alike) == len(compared) - 1
        counts = f"{theirs.k}/{theirs.n} in the reference"
        if theirs.value == FLOOR:
            sentences.append(
                f"`{metric}` is 0% in {'every cell' if every else cells} and in the reference "
                f"({counts}): the task is out of reach there (a floor); whether a treatment "
                "helps cannot be told from runs that all fail"
            )
        else:
            sentences.append(
                f"`{metric}` is 100% in {'every cell' if every else cells} and in the reference "
                f"({counts}): every run succeeds there (a ceiling); whether a treatment helps "
                "cannot be told from runs that all succeed, and a harder task could tell"
            )
    return sentences
