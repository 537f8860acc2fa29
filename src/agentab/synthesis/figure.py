"""The figure of a synthesis: gaps.svg, a forest plot of every gap.

Written as SVG by hand. A plotting library cost more than the rest of a synthesis of 10 000 runs
(importing it and drawing took 1.5 s against 0.4 s to read every measures.json), and a forest
plot is a few lines, circles and labels. The same gaps give the same bytes; text stays text
(searchable in a browser), and each gap carries its figures as a tooltip.
"""

from __future__ import annotations

import math
from collections import defaultdict
from html import escape
from pathlib import Path

from agentab.metrics import RATE
from agentab.synthesis import stats
from agentab.synthesis.prose import count_text, describe_gap_figures
from agentab.synthesis.verdicts import Gap, SynthesisResult

ESTABLISHED_COLOUR = "#1f4e9c"
INCONCLUSIVE_COLOUR = "#8a8a8a"
GRID_COLOUR = "#dddddd"
FONT = "font-family:DejaVu Sans,Helvetica,Arial,sans-serif"

# Geometry in pixels. Label widths are estimated from their length: measuring text needs a font
# engine, and a generous estimate only widens the margin.
ROW, PANEL_HEAD, PANEL_GAP, AXIS, LEGEND, MARGIN = 22, 30, 26, 20, 52, 12
PLOT_WIDTH, LABEL_CHAR, FONT_SIZE = 420, 7.0, 12
MOST_TICKS = 7
RATE_LIMIT_PP = 100.0
EDGE_MARGIN = 0.04  # of the span of a panel's values


def _on_sign_scale(gap: Gap) -> bool:
    return gap.sequence is not None and gap.kind != RATE


def render_figure(result: SynthesisResult, svg: Path) -> None:
    """A forest plot of every gap with its interval, one panel per metric, established filled."""
    # The A/A copy's included, by its name. A median's confidence sequence (sequential
    # stopping) is on another scale than its gap: the report draws it over its waves instead.
    pooled = [gap for gap in result.gaps if gap.pooled and not _on_sign_scale(gap)]
    Path(svg).write_text(figure_svg(pooled), encoding="utf-8")


def figure_svg(gaps: list[Gap]) -> str:
    by_metric: dict[str, list[Gap]] = defaultdict(list)
    for gap in gaps:
        by_metric[gap.metric].append(gap)
    longest_label = max((len(gap.cell) for gap in gaps), default=10)
    left = MARGIN + min(260, LABEL_CHAR * longest_label)
    width = left + PLOT_WIDTH + 2 * MARGIN
    parts: list[str] = []
    top = MARGIN
    for metric, metric_gaps in by_metric.items():
        parts += _panel(metric, metric_gaps, left, top)
        top += _panel_height(metric_gaps) + PANEL_GAP
    if by_metric:
        parts += _legend(gaps[0].reference, width, top)
        height = top + LEGEND
    else:
        height = 80
        empty = "no gap to show (one cell, or no scored metric with values)"
        parts.append(_text(width / 2, height / 2, empty, anchor="middle"))
    return "\n".join(
        [
            '<?xml version="1.0" encoding="utf-8"?>',
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" height="{_n(height)}" '
            f'viewBox="0 0 {_n(width)} {_n(height)}" style="{FONT};font-size:{FONT_SIZE}px">',
            f'<rect width="{_n(width)}" height="{_n(height)}" fill="white"/>',
            *parts,
            "</svg>",
            "",
        ]
    )


def _panel_height(gaps: list[Gap]) -> float:
    return PANEL_HEAD + _plot_height(gaps) + AXIS


def _plot_height(gaps: list[Gap]) -> float:
    return ROW * len(gaps) + ROW / 2


def _panel(metric: str, gaps: list[Gap], left: float, top: float) -> list[str]:
    # A rate is drawn in percentage points, as the report writes it.
    scale = 100.0 if gaps[0].kind == RATE else 1.0
    unit = "rate, percentage points" if gaps[0].kind == RATE else "median"
    ends = [scale * end for gap in gaps for end in (gap.verdict.ci_low, gap.verdict.ci_high)]
    smallest, largest = min(ends + [0.0]), max(ends + [0.0])
    # A margin, so that a point or an interval's end never sits on the frame.
    margin = EDGE_MARGIN * (largest - smallest)
    low, high = smallest - margin, largest + margin
    if gaps[0].kind == RATE:
        # A rate gap lies in −100..+100 pp: an axis beyond it shows differences that cannot be.
        low, high = max(low, -RATE_LIMIT_PP), min(high, RATE_LIMIT_PP)
    ticks = nice_ticks(low, high)
    low, high = ticks[0], ticks[-1]
    plot_top = top + PANEL_HEAD
    plot_bottom = plot_top + _plot_height(gaps)

    def x(value: float) -> float:
        return left + PLOT_WIDTH * (value - low) / (high - low)

    parts = [_text(left, top + PANEL_HEAD - 10, f"{metric}: difference in {unit}", size=13)]
    for tick in ticks:
        parts.append(_line(x(tick), plot_top, x(tick), plot_bottom, GRID_COLOUR, 0.8))
        label = _tick_label(tick, ticks[1] - ticks[0])
        parts.append(_text(x(tick), plot_bottom + 14, label, anchor="middle", size=10))
    parts.append(
        f'<rect x="{_n(left)}" y="{_n(plot_top)}" width="{_n(PLOT_WIDTH)}" '
        f'height="{_n(plot_bottom - plot_top)}" fill="none" stroke="black" stroke-width="0.8"/>'
    )
    parts.append(_line(x(0.0), plot_top, x(0.0), plot_bottom, "black", 1))
    for row, gap in enumerate(gaps):  # the first cell on top
        y = plot_top + ROW * (row + 0.75)
        colour = ESTABLISHED_COLOUR if gap.verdict.is_established else INCONCLUSIVE_COLOUR
        fill = colour if gap.verdict.is_established else "white"
        state = "established" if gap.verdict.is_established else "inconclusive"
        parts += [
            _text(left - 6, y + 4, gap.cell, anchor="end"),
            f"<g><title>{escape(f'{gap.cell}: {describe_gap_figures(gap)}, {state}')}</title>",
            _line(x(scale * gap.verdict.ci_low), y, x(scale * gap.verdict.ci_high), y, colour, 2),
            _circle(x(scale * gap.verdict.gap), y, fill, colour),
            "</g>",
        ]
    return parts


def _legend(reference: str, width: float, top: float) -> list[str]:
    middle = width / 2
    title = (
        f"gap to the reference {reference!r}, 95% bootstrap interval "
        f"({count_text(stats.DRAWS)} draws)"
    )
    y = top + 34
    return [
        _text(middle, top + 12, title, anchor="middle"),
        _line(middle - 120, y, middle - 96, y, ESTABLISHED_COLOUR, 2),
        _circle(middle - 108, y, ESTABLISHED_COLOUR, ESTABLISHED_COLOUR),
        _text(middle - 88, y + 4, "established"),
        _line(middle + 10, y, middle + 34, y, INCONCLUSIVE_COLOUR, 2),
        _circle(middle + 22, y, "white", INCONCLUSIVE_COLOUR),
        _text(middle + 42, y + 4, "inconclusive"),
    ]


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


def _tick_label(value: float, step: float) -> str:
    """As many decimals as the step needs, and no exponent: 0.25, 1500, 1000000."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{value:.{decimals}f}"
    return "0" if float(text) == 0 else text


def _n(value: float) -> str:
    """A coordinate: two decimals at most, so that the same figure is the same bytes."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = FONT_SIZE) -> str:
    style = f' font-size="{size}"' if size != FONT_SIZE else ""
    return f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}"{style}>{escape(text)}</text>'


def _line(x1: float, y1: float, x2: float, y2: float, colour: str, width: float) -> str:
    return (
        f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" '
        f'stroke="{colour}" stroke-width="{_n(width)}"/>'
    )


def _circle(x: float, y: float, fill: str, colour: str) -> str:
    return (
        f'<circle cx="{_n(x)}" cy="{_n(y)}" r="4.5" fill="{fill}" stroke="{colour}" '
        f'stroke-width="1.5"/>'
    )
