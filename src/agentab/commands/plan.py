"""`agentab plan RESULTS_DIR`: repetitions per cell needed to establish a gap, from pilot data."""

from __future__ import annotations

import math
from pathlib import Path

from agentab.metrics import RATE
from agentab.synthesis import stats
from agentab.synthesis.power import DEFAULT_SIMULATIONS, PowerRow, repetitions_needed


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="repetitions per cell needed to establish a gap, simulated from pilot runs",
        description=(
            "Read the pilot runs of RESULTS_DIR and tell, per metric, how many repetitions per "
            "cell make a gap established with the given probability under the synthesis's own "
            "rule (95% bootstrap interval excluding 0), by simulating whole experiments from "
            "the pilot. Without --gap: for each cell, the gap the pilot shows. With --gap: a gap "
            "of that size against the reference (a proportion for a rate, e.g. 0.2; the "
            "metric's unit for a median, e.g. 2 turns)."
        ),
    )
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR", help="e.g. results/demo")
    parser.add_argument("--gap", type=float, help="the gap size to plan for (default: the pilot's)")
    parser.add_argument(
        "--power", type=float, default=0.8, help="wanted probability of an established verdict"
    )
    parser.add_argument(
        "--metric", action="append", dest="metrics", help="plan only this metric (repeatable)"
    )
    parser.add_argument(
        "--max-repetitions", type=int, default=200, help="largest repetition count tried"
    )
    parser.add_argument(
        "--simulations",
        type=int,
        default=DEFAULT_SIMULATIONS,
        help="simulated experiments per repetition count (more: steadier, slower)",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    rows = repetitions_needed(
        args.results_dir,
        gap=args.gap,
        power=args.power,
        metrics=args.metrics,
        max_repetitions=args.max_repetitions,
        simulations=args.simulations,
    )
    print(render(rows, args.power, args.max_repetitions, args.simulations))
    return 0


def render(rows: list[PowerRow], power: float, max_repetitions: int, simulations: int) -> str:
    lines = [
        f"repetitions per cell for a {power:.0%} chance of an established gap "
        f"({simulations} simulated experiments per size, {stats.DRAWS} bootstrap draws each)",
        "",
    ]
    if not rows:
        return "\n".join(lines + ["no scored metric with pilot values to plan from"])
    header = ("metric", "cell", "pilot n", "gap", "repetitions", "power")
    table = [header]
    for row in rows:
        table.append(
            (
                row.metric,
                row.cell or f"(any) vs {row.reference}",
                f"{row.pilot_n_cell}/{row.pilot_n_ref}" if row.cell else str(row.pilot_n_ref),
                _gap_text(row),
                _repetitions_text(row, max_repetitions),
                "" if row.power is None else f"{row.power:.2f}",
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        cells = (text.ljust(width) for text, width in zip(line, widths, strict=True))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _gap_text(row: PowerRow) -> str:
    if math.isnan(row.gap):
        return "-"
    return f"{100 * row.gap:+.3g} pp" if row.kind == RATE else f"{row.gap:+.4g}"


def _repetitions_text(row: PowerRow, max_repetitions: int) -> str:
    if row.repetitions is not None:
        return str(row.repetitions)
    return row.note or f"> {max_repetitions}"
