"""The A/A calibration: what the gaps between the reference and its identical copy say.

`[protocol] aa = true` measures `<reference> (A/A)`, the reference's treatment under another
name and other seeds. Its gaps against the reference are computed like any other, but they are
not findings: they are the measurement's own noise. They stay out of the Holm family (they
would dilute it with gaps nobody doubts are null), get a section of their own, and an
established one is a warning at the top of the synthesis: the measurement moves between two
identical cells, so every established gap of the same metric deserves suspicion.
"""

from __future__ import annotations

from agentab.synthesis.verdicts import Gap, SynthesisResult


def aa_warnings(result: SynthesisResult, describe) -> list[str]:
    """One warning per established A/A gap; `describe` writes a gap's figures."""
    return [
        f"A/A calibration: `{gap.cell}` differs from `{gap.reference}` on `{gap.metric}` "
        f"({describe(gap)}), an established gap between two identical cells: the measurement "
        "itself moves (chance, drift of the model or the environment), so read every "
        f"established gap of `{gap.metric}` with that in mind"
        for gap in result.calibration
        if gap.verdict.is_established
    ]


def calibration_summary(gaps: list[Gap]) -> str:
    """One sentence under the calibration table."""
    if not gaps:
        return ""
    established = sum(1 for gap in gaps if gap.verdict.is_established)
    if not established:
        return (
            f"None of the {len(gaps)} A/A gaps is established: the measurement did not "
            "tell two identical cells apart."
        )
    return (
        f"{established} of the {len(gaps)} A/A gaps {'is' if established == 1 else 'are'} "
        "established: two identical cells were told apart, which chance alone does in about "
        "5% of gaps; see the warning above."
    )
