"""frontier.svg: each cell's median cost per run against each rate metric, the frontier drawn and
named in words under it.

Written by hand as gaps.svg is (`figure`): text stays text, each point carries its figures as a
tooltip, and the same inputs give the same bytes.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from agentab import stats
from agentab.synthesis.figures import svg
from agentab.synthesis.figures.svg import (
    ESTABLISHED_COLOUR,
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
TICK_SIZE, CHAR = 10, 7.2  # DejaVu Sans at 12 px: about 7 px a character
EDGE_MARGIN = 0.04  # of the span of a panel's costs
RATE_TICKS = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]


def render_frontier(found: Frontier, target: Path) -> None:
    Path(target).write_text(frontier_svg(found), encoding="utf-8")


def frontier_svg(found: Frontier) -> str:
    sentences = [line for panel in found.panels for line in panel.sentences] + [found.why]
    width = max(LEFT + PLOT_WIDTH + 150, 2 * MARGIN + CHAR * max(map(len, sentences)))
    parts: list[str] = [svg.text(MARGIN, MARGIN + 12, found.why, size=TICK_SIZE + 1)]
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
        parts.append(svg.text(width / 2, top + 30, empty, anchor="middle"))
    return svg.document(width, height, parts)


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
    parts = [svg.text(LEFT, top + TITLE - 10, title, size=13)]
    for tick in ticks:
        parts.append(svg.line(x(tick), plot_top, x(tick), plot_bottom, GRID_COLOUR, 0.8))
        label = svg.tick_label(tick, ticks[1] - ticks[0])
        parts.append(svg.text(x(tick), plot_bottom + 14, label, anchor="middle", size=TICK_SIZE))
    for tick in RATE_TICKS:
        parts.append(svg.line(LEFT, y(tick), LEFT + PLOT_WIDTH, y(tick), GRID_COLOUR, 0.8))
        parts.append(svg.text(LEFT - 6, y(tick) + 4, percent(tick), anchor="end", size=TICK_SIZE))
    parts.append(
        f'<rect x="{svg.coordinate(LEFT)}" y="{svg.coordinate(plot_top)}" width="{svg.coordinate(PLOT_WIDTH)}" '
        f'height="{svg.coordinate(PLOT_HEIGHT)}" fill="none" stroke="black" stroke-width="0.8"/>'
    )
    on = sorted((p for p in panel.points if p.on_frontier), key=lambda p: (p.cost, -p.rate))
    if len(on) > 1:
        line = " ".join(f"{svg.coordinate(x(p.cost))},{svg.coordinate(y(p.rate))}" for p in on)
        parts.append(
            f'<polyline class="frontier" points="{line}" fill="none" '
            f'stroke="{FRONTIER_COLOUR}" stroke-width="1.5" stroke-dasharray="5 3"/>'
        )
    placed: list[tuple[float, float, float, float]] = []
    for point in sorted(panel.points, key=lambda p: (-p.rate, p.cost)):
        parts += _point(point, unit, x, y, placed)
    words_top = plot_bottom + AXIS
    parts.append(
        svg.text(LEFT + PLOT_WIDTH / 2, plot_bottom + 28, f"{unit} per run", anchor="middle")
    )
    for index, sentence in enumerate(panel.sentences):  # Markdown's backticks: not in a figure
        parts.append(svg.text(MARGIN, words_top + LINE * (index + 0.8), sentence.replace("`", "")))
    return parts


def _point(point: Point, unit: str, x, y, placed: list) -> list[str]:
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
    bounds = (y(1.0) + 12, y(0.0) - 3)  # a label's baseline, inside the plot's frame
    label_y = _free_line(label_x, label_y, CHAR * len(point.cell), left_side, placed, bounds)
    return [
        f'<g class="cell"><title>{escape(tip)}</title>',
        svg.line(x(point.cost_low), y(point.rate), x(point.cost_high), y(point.rate), colour, 1.5),
        svg.line(x(point.cost), y(point.rate_low), x(point.cost), y(point.rate_high), colour, 1.5),
        svg.circle(x(point.cost), y(point.rate), fill, colour),
        "</g>",
        svg.text(label_x, label_y, point.cell, anchor="end" if left_side else "start"),
    ]


def _free_line(
    x: float,
    y: float,
    length: float,
    leftwards: bool,
    placed: list,
    bounds: tuple[float, float],
) -> float:
    """The nearest line to `y`, inside the plot (`bounds`: the highest and lowest baseline),
    where a label of that length overlaps no label already placed: cells at nearly the same
    cost and rate (the demo's thinking levels, every cell at 0% on a task out of reach) would
    print their names over each other, or below the frame onto the cost axis's labels."""
    left = x - length if leftwards else x
    step = LINE - 2

    def free(line: float) -> bool:
        return not any(
            abs(line - other_y) < step and left < other_right and other_left < left + length
            for other_left, other_right, other_y, _ in placed
        )

    top, bottom = bounds
    start = min(max(y, top), bottom)
    found = start
    reach = int((bottom - top) // step) + 1
    for k in range(2 * reach + 1):  # y, then a line lower, a line higher, two lower, …
        line = start + step * ((k + 1) // 2) * (1 if k % 2 else -1)
        if top <= line <= bottom and free(line):
            found = line
            break
    placed.append((left, left + length, found, length))
    return found


def _legend(width: float, top: float) -> list[str]:
    middle = width / 2
    title = (
        f"each cell at its median cost per run and its rate; 95% bootstrap intervals "
        f"({stats.DRAWS:,} draws)".replace(",", "\u202f")
    )
    y = top + 34
    return [
        svg.text(middle, top + 12, title, anchor="middle"),
        svg.circle(middle - 150, y, FRONTIER_COLOUR, FRONTIER_COLOUR),
        svg.text(middle - 140, y + 4, "on the frontier"),
        svg.circle(middle - 20, y, "white", OFF_COLOUR),
        svg.text(middle - 10, y + 4, "off it"),
        svg.line(middle + 50, y, middle + 80, y, FRONTIER_COLOUR, 1.5).replace(
            "/>", ' stroke-dasharray="5 3"/>'
        ),
        svg.text(middle + 88, y + 4, "the frontier"),
    ]
