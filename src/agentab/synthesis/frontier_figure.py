"""frontier.svg: each cell's median cost per run against each rate metric, the frontier drawn and
named in words under it.

Written by hand as gaps.svg is (`figure`): text stays text, each point carries its figures as a
tooltip, and the same inputs give the same bytes.
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

from agentab.synthesis import stats
from agentab.synthesis.figure import (
    ESTABLISHED_COLOUR,
    FONT,
    GRID_COLOUR,
    INCONCLUSIVE_COLOUR,
    nice_ticks,
)
from agentab.synthesis.frontier import Frontier, Panel, Point, amount
from agentab.synthesis.wording import percent

FRONTIER_COLOUR = ESTABLISHED_COLOUR
OFF_COLOUR = INCONCLUSIVE_COLOUR
MARGIN, LEFT, PLOT_WIDTH, PLOT_HEIGHT = 12, 56, 420, 200
TITLE, AXIS, LINE, PANEL_GAP, LEGEND = 28, 34, 16, 22, 58
FONT_SIZE, TICK_SIZE, CHAR = 12, 10, 6.4
EDGE_MARGIN = 0.04  # of the span of a panel's costs
RATE_TICKS = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]


def render_frontier(found: Frontier, svg: Path) -> None:
    Path(svg).write_text(frontier_svg(found), encoding="utf-8")


def frontier_svg(found: Frontier) -> str:
    sentences = [line for panel in found.panels for line in panel.sentences] + [found.why]
    width = max(LEFT + PLOT_WIDTH + 150, 2 * MARGIN + CHAR * max(map(len, sentences)))
    parts: list[str] = [_text(MARGIN, MARGIN + 12, found.why, size=TICK_SIZE + 1)]
    top = MARGIN + 20
    for panel in found.panels:
        parts += _panel(panel, found.unit, top)
        top += _panel_height(panel) + PANEL_GAP
    if found.panels:
        parts += _legend(width, top)
        height = top + LEGEND
    else:
        height = top + 60
        empty = "no rate metric with values to draw"
        parts.append(_text(width / 2, top + 30, empty, anchor="middle"))
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


def _panel_height(panel: Panel) -> float:
    return TITLE + PLOT_HEIGHT + AXIS + LINE * len(panel.sentences)


def _panel(panel: Panel, unit: str, top: float) -> list[str]:
    ends = [end for point in panel.points for end in (point.cost_low, point.cost_high)]
    margin = EDGE_MARGIN * (max(ends) - min(ends)) or max(1.0, abs(max(ends)) * EDGE_MARGIN)
    ticks = nice_ticks(max(0.0, min(ends) - margin), max(ends) + margin)
    low, high = ticks[0], ticks[-1]
    plot_top, plot_bottom = top + TITLE, top + TITLE + PLOT_HEIGHT

    def x(value: float) -> float:
        return LEFT + PLOT_WIDTH * (value - low) / (high - low)

    def y(rate: float) -> float:
        return plot_bottom - PLOT_HEIGHT * rate

    title = f"{panel.metric}: rate against the median cost per run ({unit})"
    parts = [_text(LEFT, top + TITLE - 10, title, size=13)]
    for tick in ticks:
        parts.append(_line(x(tick), plot_top, x(tick), plot_bottom, GRID_COLOUR, 0.8))
        label = _tick_label(tick, ticks[1] - ticks[0])
        parts.append(_text(x(tick), plot_bottom + 14, label, anchor="middle", size=TICK_SIZE))
    for tick in RATE_TICKS:
        parts.append(_line(LEFT, y(tick), LEFT + PLOT_WIDTH, y(tick), GRID_COLOUR, 0.8))
        parts.append(_text(LEFT - 6, y(tick) + 4, percent(tick), anchor="end", size=TICK_SIZE))
    parts.append(
        f'<rect x="{_n(LEFT)}" y="{_n(plot_top)}" width="{_n(PLOT_WIDTH)}" '
        f'height="{_n(PLOT_HEIGHT)}" fill="none" stroke="black" stroke-width="0.8"/>'
    )
    on = sorted((p for p in panel.points if p.on_frontier), key=lambda p: (p.cost, -p.rate))
    if len(on) > 1:
        line = " ".join(f"{_n(x(p.cost))},{_n(y(p.rate))}" for p in on)
        parts.append(
            f'<polyline class="frontier" points="{line}" fill="none" '
            f'stroke="{FRONTIER_COLOUR}" stroke-width="1.5" stroke-dasharray="5 3"/>'
        )
    for point in panel.points:
        parts += _point(point, unit, x, y)
    words_top = plot_bottom + AXIS
    parts.append(_text(LEFT + PLOT_WIDTH / 2, plot_bottom + 28, f"{unit} per run", anchor="middle"))
    for index, sentence in enumerate(panel.sentences):  # Markdown's backticks: not in a figure
        parts.append(_text(MARGIN, words_top + LINE * (index + 0.8), sentence.replace("`", "")))
    return parts


def _point(point: Point, unit: str, x, y) -> list[str]:
    colour = FRONTIER_COLOUR if point.on_frontier else OFF_COLOUR
    fill = colour if point.on_frontier else "white"
    where = "on the frontier" if point.on_frontier else f"off it (below {point.dominated_by})"
    tip = (
        f"{point.cell}: {percent(point.rate)} [{percent(point.rate_low)}, "
        f"{percent(point.rate_high)}] at {amount(point.cost, unit)} "
        f"[{amount(point.cost_low, unit)}, {amount(point.cost_high, unit)}] per run, {where}"
    )
    left_side = x(point.cost) > LEFT + 0.6 * PLOT_WIDTH
    label_x = x(point.cost) + (-7 if left_side else 7)
    # Below the point near the top, where above it would run into the panel's title.
    label_y = y(point.rate) + (16 if point.rate > 0.9 else -6)
    return [
        f'<g class="cell"><title>{escape(tip)}</title>',
        _line(x(point.cost_low), y(point.rate), x(point.cost_high), y(point.rate), colour, 1.5),
        _line(x(point.cost), y(point.rate_low), x(point.cost), y(point.rate_high), colour, 1.5),
        _circle(x(point.cost), y(point.rate), fill, colour),
        "</g>",
        _text(label_x, label_y, point.cell, anchor="end" if left_side else "start"),
    ]


def _legend(width: float, top: float) -> list[str]:
    middle = width / 2
    title = (
        f"each cell at its median cost per run and its rate; 95% bootstrap intervals "
        f"({stats.DRAWS:,} draws)".replace(",", "\u202f")
    )
    y = top + 34
    return [
        _text(middle, top + 12, title, anchor="middle"),
        _circle(middle - 150, y, FRONTIER_COLOUR, FRONTIER_COLOUR),
        _text(middle - 140, y + 4, "on the frontier"),
        _circle(middle - 20, y, "white", OFF_COLOUR),
        _text(middle - 10, y + 4, "off it"),
        _line(middle + 50, y, middle + 80, y, FRONTIER_COLOUR, 1.5).replace(
            "/>", ' stroke-dasharray="5 3"/>'
        ),
        _text(middle + 88, y + 4, "the frontier"),
    ]


def _tick_label(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{value:.{decimals}f}"
    return "0" if float(text) == 0 else text


def _n(value: float) -> str:
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
