"""The A/A calibration: what the gaps between the reference and its identical copy say.

`[protocol] aa = true` measures `<reference> (A/A)`, the reference's treatment under another
name and other seeds. Its gaps against the reference are computed like any other, but they are
not findings: they are the measurement's own noise. They stay out of the cells' Holm family
(they would dilute it with gaps nobody doubts are null) and form one of their own, get a
section of their own, and an established one whose Holm p over the A/A gaps stays below 0.05
is a warning at the top of the synthesis: the measurement moves between two identical cells, so
every established gap of the same metric deserves suspicion. Without Holm, a report with four
metrics would warn in about one null experiment out of five; with it, in at most one out of
twenty (benchmarks/sim_tasks.py).
"""

from __future__ import annotations

from agentab.synthesis.verdicts import Gap, SynthesisResult


def aa_warnings(result: SynthesisResult, describe) -> list[str]:
    """One warning per established A/A gap that survives Holm over the A/A gaps; `describe`
    writes a gap's figures."""
    count = len(result.calibration)
    return [
        f"A/A calibration: `{gap.cell}` differs from `{gap.reference}` on `{gap.metric}` "
        f"({describe(gap)}; Holm p over the {count} A/A gap{'s' * (count != 1)} "
        f"{gap.p_holm:.3g}), an established gap between two identical cells: the measurement "
        "itself moves (chance, drift of the model or the environment), so read every "
        f"established gap of `{gap.metric}` with that in mind"
        for gap in result.calibration
        if gap.survives_holm
    ]


def calibration_summary(gaps: list[Gap]) -> str:
    """One sentence under the calibration table."""
    if not gaps:
        return ""
    established = [gap for gap in gaps if gap.verdict.is_established]
    if not established:
        return (
            f"None of the {len(gaps)} A/A gaps is established: the measurement did not "
            "tell two identical cells apart."
        )
    holding = sum(gap.survives_holm for gap in established)
    verb = "is" if len(established) == 1 else "are"
    if not holding:
        return (
            f"{len(established)} of the {len(gaps)} A/A gaps {verb} established, none once "
            f"Holm's adjustment over the {len(gaps)} A/A gaps is taken into account: what "
            "chance alone does in a table of this size, no warning."
        )
    return (
        f"{len(established)} of the {len(gaps)} A/A gaps {verb} established, {holding} still "
        f"after Holm's adjustment over the {len(gaps)} A/A gaps: two identical cells were told "
        "apart; see the warning above."
    )
