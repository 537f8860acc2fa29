"""The figure of a synthesis: gaps.png and gaps.svg, a forest plot of every gap.

The same gaps give the same SVG bytes: a fixed hash salt, no date, text kept as text.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from agentab import stats
from agentab.metrics import RATE
from agentab.prose import count_text
from agentab.verdicts import Gap, SynthesisResult

ESTABLISHED_COLOUR = "#1f4e9c"
INCONCLUSIVE_COLOUR = "#8a8a8a"
# A fixed salt and no date make the SVG the same bytes for the same gaps; text stays text
# (searchable, and much faster to write than one path per glyph).
SVG_HASH_SALT = "agentab-gaps"


# Figure geometry in inches, laid out by hand: a layout engine measures every label several
# times, which is most of the cost of a figure with hundreds of gaps.
ROW_IN, PANEL_HEAD_IN, PANEL_GAP_IN, LEGEND_IN, TOP_IN = 0.28, 0.5, 0.35, 0.75, 0.15
PLOT_WIDTH_IN, LABEL_CHAR_IN = 5.5, 0.07
MAX_PNG_PIXELS = 4000


def render_figure(result: SynthesisResult, png: Path, svg: Path) -> None:
    """A forest plot of every gap with its interval, one panel per metric, established filled."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    by_metric: dict[str, list[Gap]] = defaultdict(list)
    for gap in result.gaps:
        by_metric[gap.metric].append(gap)
    longest_label = max((len(gap.cell) for gap in result.gaps), default=10)
    left_in = min(3.5, 0.3 + LABEL_CHAR_IN * longest_label)
    panel_heights = [PANEL_HEAD_IN + ROW_IN * (len(gaps) + 1) for gaps in by_metric.values()]
    height_in = TOP_IN + sum(panel_heights) + PANEL_GAP_IN * len(panel_heights) + LEGEND_IN
    width_in = left_in + PLOT_WIDTH_IN + 0.3
    with matplotlib.rc_context(
        {"svg.hashsalt": SVG_HASH_SALT, "svg.fonttype": "none", "font.size": 9}
    ):
        figure = Figure(figsize=(width_in, max(height_in, 1.5)))
        FigureCanvasAgg(figure)
        if not by_metric:
            figure.text(0.5, 0.5, "no gap to show (one cell, or no scored metric with values)",
                        ha="center", va="center")  # fmt: skip
        top = height_in - TOP_IN
        for (metric, gaps), panel_in in zip(by_metric.items(), panel_heights, strict=True):
            plot_in = panel_in - PANEL_HEAD_IN
            bottom = top - PANEL_HEAD_IN - plot_in
            axes = figure.add_axes(
                (
                    left_in / width_in,
                    bottom / height_in,
                    PLOT_WIDTH_IN / width_in,
                    plot_in / height_in,
                )
            )
            _draw_panel(axes, metric, gaps)
            top = bottom - PANEL_GAP_IN
        if by_metric:
            figure.legend(
                handles=[
                    Line2D([], [], marker="o", color=ESTABLISHED_COLOUR, label="established"),
                    Line2D(
                        [],
                        [],
                        marker="o",
                        color=INCONCLUSIVE_COLOUR,
                        markerfacecolor="white",
                        label="inconclusive",
                    ),  # fmt: skip
                ],
                loc="lower center",
                ncols=2,
                frameon=False,
                title=f"gap to the reference {result.gaps[0].reference!r}, "
                f"95% bootstrap interval ({count_text(stats.DRAWS)} draws)",
            )
        # A very tall figure (hundreds of gaps) is read in the SVG; its PNG stays a preview.
        dpi = max(30, min(100, int(MAX_PNG_PIXELS / height_in)))
        figure.savefig(png, format="png", dpi=dpi, metadata={"Software": None})
        figure.savefig(svg, format="svg", metadata={"Date": None})


def _draw_panel(axes, metric: str, gaps: list[Gap]) -> None:
    # A rate is drawn in percentage points, as the report writes it.
    scale = 100.0 if gaps[0].kind == RATE else 1.0
    rows = np.arange(len(gaps))[::-1]  # the first cell on top
    for established in (False, True):
        chosen = [i for i, gap in enumerate(gaps) if gap.verdict.is_established == established]
        if not chosen:
            continue
        colour = ESTABLISHED_COLOUR if established else INCONCLUSIVE_COLOUR
        lows = [scale * gaps[i].verdict.ci_low for i in chosen]
        highs = [scale * gaps[i].verdict.ci_high for i in chosen]
        axes.hlines(rows[chosen], lows, highs, color=colour, linewidth=2)
        axes.scatter([scale * gaps[i].verdict.gap for i in chosen], rows[chosen], s=36, zorder=3,
                     color=colour if established else "white", edgecolors=colour)  # fmt: skip
    axes.axvline(0, color="black", linewidth=0.8)
    axes.set_ylim(-0.7, len(gaps) - 0.3)
    # Row labels and the title as plain text: a tick per row costs several artists and a layout
    # pass each, which is most of the time of a figure with hundreds of gaps.
    axes.set_yticks([])
    labels = axes.get_yaxis_transform()
    for row, gap in zip(rows, gaps, strict=True):
        axes.text(-0.015, row, gap.cell, transform=labels, ha="right", va="center")
    unit = "rate, percentage points" if gaps[0].kind == RATE else "median"
    axes.text(0, 1.04, f"{metric}: difference in {unit}", transform=axes.transAxes,
              ha="left", va="bottom", fontsize=10)  # fmt: skip
    axes.grid(axis="x", color="#dddddd", linewidth=0.6)
