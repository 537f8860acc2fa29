"""The figure of a synthesis: gaps.svg, a forest plot of every gap.

Written as SVG by hand. A plotting library cost more than the rest of a synthesis of 10 000 runs
(importing it and drawing took 1.5 s against 0.4 s to read every measures.json), and a forest
plot is a few lines, circles and labels. The same gaps give the same bytes; text stays text
(searchable in a browser), and each gap carries its figures as a tooltip.
"""

from __future__ import annotations

from collections import defaultdict
from html import escape
from pathlib import Path

from agentab import stats
from agentab.metrics import RATE
from agentab.synthesis.figures import svg
from agentab.synthesis.figures.svg import (
    ESTABLISHED_COLOUR,
    GRID_COLOUR,
    INCONCLUSIVE_COLOUR,
    nice_ticks,
)
from agentab.synthesis.prose import count_text, describe_gap_figures
from agentab.synthesis.verdicts import Gap, SynthesisResult

# Geometry in pixels. Label widths are estimated from their length: measuring text needs a font
# engine, and a generous estimate only widens the margin.
ROW, PANEL_HEAD, PANEL_GAP, AXIS, LEGEND, MARGIN = 22, 30, 26, 20, 52, 12
PLOT_WIDTH, LABEL_CHAR = 420, 7.0
RATE_LIMIT_PP = 100.0
EDGE_MARGIN = 0.04  # of the span of a panel's values


def _on_sign_scale(gap: Gap) -> bool:
    return gap.sequence is not None and gap.kind != RATE


def render_figure(result: SynthesisResult, target: Path) -> None:
    """A forest plot of every gap with its interval, one panel per metric, established filled."""
    # The A/A copy's included, by its name. A median's confidence sequence (sequential
    # stopping) is on another scale than its gap: the report draws it over its waves instead.
    pooled = [gap for gap in result.gaps if gap.pooled and not _on_sign_scale(gap)]
    Path(target).write_text(figure_svg(pooled), encoding="utf-8")


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
        parts.append(svg.text(width / 2, height / 2, empty, anchor="middle"))
    return svg.document(width, height, parts)


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

    parts = [svg.text(left, top + PANEL_HEAD - 10, f"{metric}: difference in {unit}", size=13)]
    for tick in ticks:
        parts.append(svg.line(x(tick), plot_top, x(tick), plot_bottom, GRID_COLOUR, 0.8))
        label = svg.tick_label(tick, ticks[1] - ticks[0])
        parts.append(svg.text(x(tick), plot_bottom + 14, label, anchor="middle", size=10))
    parts.append(
        f'<rect x="{svg.coordinate(left)}" y="{svg.coordinate(plot_top)}" width="{svg.coordinate(PLOT_WIDTH)}" '
        f'height="{svg.coordinate(plot_bottom - plot_top)}" fill="none" stroke="black" stroke-width="0.8"/>'
    )
    parts.append(svg.line(x(0.0), plot_top, x(0.0), plot_bottom, "black", 1))
    for row, gap in enumerate(gaps):  # the first cell on top
        y = plot_top + ROW * (row + 0.75)
        colour = ESTABLISHED_COLOUR if gap.verdict.is_established else INCONCLUSIVE_COLOUR
        fill = colour if gap.verdict.is_established else "white"
        state = "established" if gap.verdict.is_established else "inconclusive"
        parts += [
            svg.text(left - 6, y + 4, gap.cell, anchor="end"),
            f"<g><title>{escape(f'{gap.cell}: {describe_gap_figures(gap)}, {state}')}</title>",
            svg.line(
                x(scale * gap.verdict.ci_low), y, x(scale * gap.verdict.ci_high), y, colour, 2
            ),
            svg.circle(x(scale * gap.verdict.gap), y, fill, colour),
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
        svg.text(middle, top + 12, title, anchor="middle"),
        svg.line(middle - 120, y, middle - 96, y, ESTABLISHED_COLOUR, 2),
        svg.circle(middle - 108, y, ESTABLISHED_COLOUR, ESTABLISHED_COLOUR),
        svg.text(middle - 88, y + 4, "established"),
        svg.line(middle + 10, y, middle + 34, y, INCONCLUSIVE_COLOUR, 2),
        svg.circle(middle + 22, y, "white", INCONCLUSIVE_COLOUR),
        svg.text(middle + 42, y + 4, "inconclusive"),
    ]
