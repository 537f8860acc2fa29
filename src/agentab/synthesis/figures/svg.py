"""What agentab's figures are drawn with: SVG elements written by hand, and round ticks.

gaps.svg and frontier.svg (and any figure after them) share these, so that the same inputs give
the same bytes in each and the figures look alike: one font, one palette, coordinates with two
decimals at most.
"""

from __future__ import annotations

import math
from html import escape

ESTABLISHED_COLOUR = "#1f4e9c"
INCONCLUSIVE_COLOUR = "#8a8a8a"
GRID_COLOUR = "#dddddd"
FONT = "font-family:DejaVu Sans,Helvetica,Arial,sans-serif"
FONT_SIZE = 12
MOST_TICKS = 7


def document(width: float, height: float, parts: list[str]) -> str:
    """A whole SVG file: a white page of that size, the font every figure uses, the parts in
    order."""
    size = f'width="{coordinate(width)}" height="{coordinate(height)}"'
    return "\n".join(
        [
            '<?xml version="1.0" encoding="utf-8"?>',
            f'<svg xmlns="http://www.w3.org/2000/svg" {size} '
            f'viewBox="0 0 {coordinate(width)} {coordinate(height)}" '
            f'style="{FONT};font-size:{FONT_SIZE}px">',
            f'<rect {size} fill="white"/>',
            *parts,
            "</svg>",
            "",
        ]
    )


def nice_ticks(low: float, high: float) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten apart) whose ends enclose [low, high]."""
    if high - low <= 0:
        low, high = low - 1, high + 1
    for step in _steps(high - low):
        first, last = math.floor(low / step), math.ceil(high / step)
        # low / step is rounded: the tick it gives may land a hair inside the range.
        first -= first * step > low
        last += last * step < high
        if last - first + 1 <= MOST_TICKS:
            return [(first + i) * step for i in range(last - first + 1)]
    raise AssertionError("a step of the whole span always fits")  # pragma: no cover


def _steps(span: float):
    power = 10.0 ** math.floor(math.log10(span / MOST_TICKS))
    while True:
        for multiple in (1, 2, 5):
            yield multiple * power
        power *= 10


def tick_label(value: float, step: float) -> str:
    """As many decimals as the step needs, and no exponent: 0.25, 1500, 1000000."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{value:.{decimals}f}"
    return "0" if float(text) == 0 else text


def coordinate(value: float) -> str:
    """A coordinate: two decimals at most, so that the same figure is the same bytes."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def text(x: float, y: float, text: str, *, anchor: str = "start", size: int = FONT_SIZE) -> str:
    style = f' font-size="{size}"' if size != FONT_SIZE else ""
    return f'<text x="{coordinate(x)}" y="{coordinate(y)}" text-anchor="{anchor}"{style}>{escape(text)}</text>'


def line(x1: float, y1: float, x2: float, y2: float, colour: str, width: float) -> str:
    return (
        f'<line x1="{coordinate(x1)}" y1="{coordinate(y1)}" x2="{coordinate(x2)}" y2="{coordinate(y2)}" '
        f'stroke="{colour}" stroke-width="{coordinate(width)}"/>'
    )


def circle(x: float, y: float, fill: str, colour: str) -> str:
    return (
        f'<circle cx="{coordinate(x)}" cy="{coordinate(y)}" r="4.5" fill="{fill}" stroke="{colour}" '
        f'stroke-width="1.5"/>'
    )
