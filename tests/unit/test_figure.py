"""gaps.svg, written by hand: well-formed, one mark per gap at its place, labels kept as text."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agentab import stats
from agentab.metrics import MEDIAN, RATE
from agentab.synthesis.figures import figure, svg
from agentab.synthesis.figures.figure import figure_svg
from agentab.synthesis.figures.svg import nice_ticks
from agentab.synthesis.verdicts import Gap

SVG = "{http://www.w3.org/2000/svg}"


def gap(cell: str, metric: str, kind: str, value: float, low: float, high: float) -> Gap:
    established = low > 0 or high < 0
    verdict = stats.GapVerdict(value, low, high, 0.01 if established else 0.5,
                               stats.ESTABLISHED if established else stats.INCONCLUSIVE)  # fmt: skip
    return Gap(cell, "base", metric, kind, 10, 10, 0.5 + value, 0.5, verdict, verdict.p)


def marks(svg: str) -> tuple[ET.Element, list[ET.Element]]:
    root = ET.fromstring(svg)
    return root, [group for group in root.iter(f"{SVG}g")]


def test_each_gap_is_a_mark_with_its_interval_and_its_figures_as_a_tooltip():
    gaps = [
        gap("rule <a&b>", "ran_tests", RATE, 0.4, 0.1, 0.7),
        gap("skill", "ran_tests", RATE, 0.05, -0.2, 0.3),
        gap("rule <a&b>", "turns", MEDIAN, -2.0, -3.0, -1.0),
    ]
    root, groups = marks(figure_svg(gaps))
    assert len(groups) == 3
    texts = [element.text for element in root.iter(f"{SVG}text")]
    assert "rule <a&b>" in texts and "skill" in texts
    assert "ran_tests: difference in rate, percentage points" in texts
    assert "turns: difference in median" in texts
    tooltips = [group.find(f"{SVG}title").text for group in groups]
    assert tooltips[0] == "rule <a&b>: +40 pp [+10, +70] pp, established"
    assert tooltips[1].endswith("inconclusive")
    filled = [group.find(f"{SVG}circle").get("fill") for group in groups]
    assert filled == [figure.ESTABLISHED_COLOUR, "white", figure.ESTABLISHED_COLOUR]


def test_the_interval_and_the_point_sit_where_the_axis_says_with_room_at_the_frame():
    root, [mark] = marks(figure_svg([gap("rule", "m", MEDIAN, 3.0, 1.0, 5.0)]))
    ticks = [
        (float(element.text), float(element.get("x")))
        for element in root.iter(f"{SVG}text")
        if element.get("font-size") == "10"  # the tick labels
    ]
    (first, x_first), (last, x_last) = ticks[0], ticks[-1]

    def x(value: float) -> float:
        return x_first + (value - first) * (x_last - x_first) / (last - first)

    interval, point = mark.find(f"{SVG}line"), mark.find(f"{SVG}circle")
    assert float(interval.get("x1")) == pytest.approx(x(1.0), abs=0.01)
    assert float(interval.get("x2")) == pytest.approx(x(5.0), abs=0.01)
    assert float(point.get("cx")) == pytest.approx(x(3.0), abs=0.01)
    assert first < 0 and last > 5  # zero is on the axis, and the interval ends off the frame


def test_no_gap_gives_a_figure_that_says_so():
    root, groups = marks(figure_svg([]))
    assert groups == []
    assert any("no gap to show" in (element.text or "") for element in root.iter(f"{SVG}text"))


@given(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.floats(min_value=1e-3, max_value=1e6, allow_nan=False),
)
@example(low=1.9, span=0.0625)  # 1.9 / 0.01 rounds to 190: the tick 1.9000000000000001 > 1.9
def test_ticks_are_round_few_and_enclose_the_range(low, span):
    high = low + span
    ticks = nice_ticks(low, high)
    assert ticks[0] <= low and ticks[-1] >= high
    assert 2 <= len(ticks) <= svg.MOST_TICKS
    step = (ticks[-1] - ticks[0]) / (len(ticks) - 1)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 1e-4


def test_an_empty_range_still_gets_an_axis_and_labels_need_no_exponent():
    assert nice_ticks(0.0, 0.0) == [-1.0, -0.5, 0.0, 0.5, 1.0]
    root, _ = marks(figure_svg([gap("rule", "m", MEDIAN, 1.5e6, 1e6, 2e6)]))
    labels = [e.text for e in root.iter(f"{SVG}text") if e.get("font-size") == "10"]
    assert "1000000" in labels and not any("e" in label for label in labels)


def test_a_rate_axis_stays_within_its_range_of_100_points_either_way():
    root, _ = marks(figure_svg([gap("rule", "ran_tests", RATE, 1.0, 1.0, 1.0),
                                gap("skill", "ran_tests", RATE, -1.0, -1.0, -0.5)]))  # fmt: skip
    labels = [e.text for e in root.iter(f"{SVG}text") if e.get("font-size") == "10"]
    assert labels[0] == "-100" and labels[-1] == "100"
