"""frontier.svg and its words: each cell at its median cost and its rate, the frontier found and
named, the unit said."""

from __future__ import annotations

import csv
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from agentab.synthesis.figures.frontier_figure import frontier_svg
from agentab.synthesis.frontier import Frontier, Panel, Point, frontier, pareto
from agentab.synthesis.runs.results import load_frozen_scenario
from agentab.synthesis.synthesize import synthesize

SVG = "{http://www.w3.org/2000/svg}"

SCENARIO = """\
[scenario]
name = "costs"

[task]
prompt = "Fix mean in calc.py."

[etalon]
repo = "calc.bundle"
tag = "v1.0"

[agent]
harness = "pi"
version = "1.6.0"
provider = "{provider}"
model = "demo"
thinking = "off"
timeout = "2m"

[protocol]
repetitions = {repetitions}
limits = {{ memory = "2G", processes = 256, disk = "1G", patch = "1M" }}

[axes]
context = ["nothing", "rule", "skill"]

[deltas.context.rule]
context_files = ["bricks/run-tests.md"]

[deltas.context.skill]
skills = ["bricks/skill"]

[validation]
metrics = ["ran_tests", "turns"]

[validators.tests]
mode = "script"
run = ["validators/tests.py"]
"""

# (ran_tests, tokens) of each run, by cell: `rule` runs the tests more for more tokens; `skill`
# costs most and runs them less than `rule` does: it is off the frontier.
RUNS = {
    "nothing": [(True, 1000), (False, 1100), (False, 1200), (False, 1300)],
    "rule": [(True, 1100), (True, 1200), (True, 1300), (False, 1500)],
    "skill": [(True, 2000), (True, 2100), (False, 2200), (False, 2300)],
}


def write_folder(tmp_path: Path, provider="offline", cost=0.0, repetitions=4) -> Path:
    """The runs of RUNS; with more repetitions, they again with a few more tokens each time."""
    folder = tmp_path / "results" / "costs"
    folder.mkdir(parents=True)
    text = SCENARIO.format(provider=provider, repetitions=repetitions)
    (folder / "scenario.toml").write_text(text, encoding="utf-8")
    for cell, runs in RUNS.items():
        for rep in range(1, repetitions + 1):
            ran, tokens = runs[(rep - 1) % len(runs)]
            tokens += 7 * (rep - 1) if rep > len(runs) else 0
            run_dir = folder / "runs" / cell / f"r{rep:02d}"
            run_dir.mkdir(parents=True)
            measures = {
                "schema": 1,
                "cell": cell,
                "rep": rep,
                "run": f"{cell}/r{rep:02d}",
                "status": "valid",
                "metrics": {"ran_tests": ran, "turns": 4},
                "provenance": {"provider": provider},
                "builtin": {
                    "input_tokens": tokens - 50,
                    "output_tokens": 50,
                    "cost_usd": cost * tokens,
                },
            }
            (run_dir / "measures.json").write_text(json.dumps(measures), encoding="utf-8")
    return folder


def point(cell: str, cost: float, rate: float) -> Point:
    return Point(cell, cost, cost, cost, rate, rate, rate)


def test_the_frontier_is_the_cells_no_other_beats_on_both_counts():
    marked = pareto(
        [
            point("a", 100, 0.2),
            point("b", 120, 0.8),
            point("c", 150, 0.5),  # b is cheaper and rates higher
            point("d", 100, 0.1),  # a costs as much and rates higher
            point("e", 200, 0.8),  # b rates as high for less
            point("f", 120, 0.8),  # the same point as b: neither beats the other
        ]
    )
    assert [p.cell for p in marked if p.on_frontier] == ["a", "b", "f"]
    assert {p.cell: p.dominated_by for p in marked if not p.on_frontier} == {
        "c": "b",
        "d": "a",
        "e": "b",
    }


def test_the_frontier_is_named_in_words_against_the_reference(tmp_path):
    folder = write_folder(tmp_path)
    result = synthesize(folder)
    found = frontier(result, load_frozen_scenario(folder))
    assert found.unit == "tokens"
    assert found.why == "cost in tokens per run (input + output): the offline model costs nothing"
    [panel] = found.panels  # turns is a median, not a rate
    # Medians: nothing 1150, rule 1250, skill 2150 tokens; rates 25%, 75%, 50%.
    assert panel.sentences == [
        "`nothing` (the reference) is on the frontier: 25% ran_tests at 1\u202f150 tokens per run",
        "`rule` is on the frontier: +50 pp ran_tests for +9% tokens against `nothing` "
        "(the reference)",
        "`skill` is off it: `rule` has a rate as high or higher (75% against 50%) for no more "
        "tokens",
    ]
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "## Cost against rates" in text
    assert "- `rule` is on the frontier: +50 pp ran_tests for +9% tokens" in text


def test_a_priced_run_is_counted_in_usd(tmp_path):
    folder = write_folder(tmp_path, provider="anthropic", cost=0.00001)
    found = frontier(synthesize(folder), load_frozen_scenario(folder))
    assert found.unit == "USD"
    assert [p.cost for p in found.panels[0].points] == pytest.approx([0.0115, 0.0125, 0.0215])


def tick_scale(root: ET.Element) -> tuple:
    """The x axis (cost) and y axis (rate) of the first panel, from its tick labels."""
    ticks = [t for t in root.iter(f"{SVG}text") if t.get("font-size") == "10"]
    costs = [(float(t.text), float(t.get("x"))) for t in ticks if not t.text.endswith("%")]
    rates = [
        (float(t.text[:-1]) / 100, float(t.get("y")) - 4) for t in ticks if t.text.endswith("%")
    ]
    (c0, x0), (c1, x1) = costs[0], costs[-1]
    (r0, y0), (r1, y1) = rates[0], rates[-1]
    return (
        lambda value: x0 + (value - c0) * (x1 - x0) / (c1 - c0),
        lambda value: y0 + (value - r0) * (y1 - y0) / (r1 - r0),
    )


def test_each_point_of_the_figure_sits_at_its_cells_values(tmp_path):
    folder = write_folder(tmp_path)
    synthesize(folder)
    root = ET.fromstring((folder / "frontier.svg").read_text(encoding="utf-8"))
    x, y = tick_scale(root)
    with (folder / "cells.csv").open(encoding="utf-8", newline="") as handle:
        rates = {
            row["cell"]: float(row["value"])
            for row in csv.DictReader(handle)
            if row["metric"] == "ran_tests"
        }
    medians = {"nothing": 1150.0, "rule": 1250.0, "skill": 2150.0}
    marks = [g for g in root.iter(f"{SVG}g") if g.get("class") == "cell"]
    assert len(marks) == 3
    for mark in marks:
        cell = mark.find(f"{SVG}title").text.split(":")[0]
        circle = mark.find(f"{SVG}circle")
        assert float(circle.get("cx")) == pytest.approx(x(medians[cell]), abs=0.01)
        assert float(circle.get("cy")) == pytest.approx(y(rates[cell]), abs=0.01)
        filled = circle.get("fill") != "white"
        assert filled == (cell != "skill")  # on the frontier: filled
    [line] = [p for p in root.iter(f"{SVG}polyline") if p.get("class") == "frontier"]
    assert line.get("points") == " ".join(
        f"{x(medians[c]):.2f}".rstrip("0").rstrip(".")
        + ","
        + f"{y(rates[c]):.2f}".rstrip("0").rstrip(".")
        for c in ("nothing", "rule")
    )
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert (
        "rule is on the frontier: +50 pp ran_tests for +9% tokens against nothing (the reference)"
        in texts
    )


def test_the_figure_is_the_same_bytes_twice_and_in_a_copy_of_the_folder(tmp_path):
    folder = write_folder(tmp_path, repetitions=40)  # costs of many values
    synthesize(folder)
    first = (folder / "frontier.svg").read_bytes()
    synthesize(folder)
    assert (folder / "frontier.svg").read_bytes() == first
    copy = tmp_path / "elsewhere" / "costs"
    shutil.copytree(folder, copy)
    (copy / "frontier.svg").unlink()
    synthesize(copy)
    assert (copy / "frontier.svg").read_bytes() == first


def test_cells_at_the_same_place_get_labels_on_lines_of_their_own():
    """The demo's thinking levels sit at nearly the same cost and rate: their names printed at
    the same height overlapped, unreadable (seen in a browser)."""
    panel = Panel(
        "ran_tests",
        [
            point("nothing · off", 4457, 0.2),
            point("nothing · high", 4470, 0.2),
            point("rule · off", 6200, 1.0),
        ],
        ["a sentence"],
    )
    root = ET.fromstring(frontier_svg(Frontier("tokens", "why", [panel])).encode())
    labels = {
        node.text: float(node.get("y"))
        for node in root.iter("{http://www.w3.org/2000/svg}text")
        if node.text in ("nothing · off", "nothing · high")
    }
    assert len(labels) == 2
    assert abs(labels["nothing · off"] - labels["nothing · high"]) >= 12


def test_labels_of_cells_at_zero_stay_in_the_plot_clear_of_each_other_and_the_axis():
    """A task out of the model's reach puts every cell at 0%: the second name was pushed below
    the plot, onto the cost axis's tick labels."""
    names = ["nothing · off", "nothing · high", "rule · off", "rule · high"]
    panel = Panel(
        "ran_tests", [point(name, 4457 + 10 * n, 0.0) for n, name in enumerate(names)], ["s"]
    )
    root = ET.fromstring(frontier_svg(Frontier("tokens", "why", [panel])).encode())
    texts = list(root.iter("{http://www.w3.org/2000/svg}text"))
    boxes = []  # (left, right, baseline) of each name, about 7 px a character
    for node in texts:
        if node.text in names:
            x, width = float(node.get("x")), 7.2 * len(node.text)
            left = x - width if node.get("text-anchor") == "end" else x
            boxes.append((left, left + width, float(node.get("y"))))
    assert len(boxes) == 4
    for index, (left, right, y) in enumerate(boxes):
        for other_left, other_right, other_y in boxes[index + 1 :]:
            assert abs(y - other_y) >= 12 or right <= other_left or other_right <= left
    frame = [n for n in root.iter("{http://www.w3.org/2000/svg}rect") if n.get("y")][0]
    bottom = float(frame.get("y")) + float(frame.get("height"))
    assert all(y <= bottom - 2 for _, _, y in boxes), (boxes, bottom)  # above the tick labels
