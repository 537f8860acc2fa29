"""A small figure of one gap's confidence sequence over its waves (sequential stopping).

One vertical bar per wave: the 95% sequence after that wave, narrowing as runs come in; a line
at 0; the bars of the wave that decided the gap and after it filled in the established colour.
Hand-written SVG in gaps.svg's colours and font (`svg`), inline in a page, and the same bytes for the same sequence.
"""

from __future__ import annotations

from html import escape

from agentab.metrics import RATE
from agentab.synthesis.figures.svg import ESTABLISHED_COLOUR, FONT, GRID_COLOUR, INCONCLUSIVE_COLOUR

WIDTH, HEIGHT, LEFT, TOP, BOTTOM = 240, 110, 44, 10, 24


def sequence_svg(path, most: int) -> str:
    """The SVG of a gap's sequence (`sequential.SequencePath`) over `most` waves."""
    plot_w, plot_h = WIDTH - LEFT - 10, HEIGHT - TOP - BOTTOM
    step = plot_w / max(most, 1)

    def x(wave: int) -> float:
        return LEFT + step * (wave - 0.5)

    def y(value: float) -> float:
        return TOP + plot_h * (1 - (value + 1) / 2)

    unit = (lambda v: f"{100 * v:+.0f} pp") if path.kind == RATE else (lambda v: f"{v:+.1f}")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" style="{FONT};font-size:10px">',
        f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(0):.1f}" y2="{y(0):.1f}" '
        f'stroke="{GRID_COLOUR}" stroke-dasharray="3,2"/>',
    ]
    for value in (-1.0, 0.0, 1.0):
        parts.append(
            f'<text x="{LEFT - 4}" y="{y(value) + 3:.1f}" text-anchor="end">{unit(value)}</text>'
        )
    decided = path.decided_at
    for look in path.looks:
        colour = ESTABLISHED_COLOUR if decided and look.wave >= decided else INCONCLUSIVE_COLOUR
        title = escape(
            f"wave {look.wave}: {look.pairs} pairs, 95% sequence [{unit(look.low)}, "
            f"{unit(look.high)}]" + (", established" if look.established else "")
        )
        parts.append(
            f'<line x1="{x(look.wave):.1f}" x2="{x(look.wave):.1f}" y1="{y(look.high):.1f}" '
            f'y2="{y(look.low):.1f}" stroke="{colour}" stroke-width="6"><title>{title}</title>'
            "</line>"
        )
    for wave in range(1, most + 1):
        parts.append(
            f'<text x="{x(wave):.1f}" y="{HEIGHT - 10}" text-anchor="middle">{wave}</text>'
        )
    parts.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 1}" text-anchor="middle">wave</text>'
    )
    parts.append("</svg>")
    return "\n".join(parts)
