"""The demo's judge checked against people, end to end: the real workflow runs the demo (two
cells, 12 runs each), the test fills the calibrating form with known answers (some against the
judge), the workflow runs again, and κ, the corrected rates and their verdicts are computed here
by hand from the measures and the answers; frontier.svg's points sit at the cells' values, and
the report shows both in a real browser."""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.browser import Chromium
from tests.e2e.workflow import job_counts, make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPETITIONS = 12
SAMPLE = 18  # 9 labelled runs per cell: the fewest from which a corrected gap is established
SVG = "{http://www.w3.org/2000/svg}"


def two_cell_demo(root: Path, harnesses: Path) -> Path:
    project = make_project(root, harnesses, repetitions=REPETITIONS)
    scenario = project / "demo" / "scenario.toml"
    text = scenario.read_text(encoding="utf-8")
    text = re.sub(r'(?m)^thinking = \["off", "high"\]\n', "", text)
    text = text.replace('[deltas.thinking.high]\nthinking = "high"\n', "")
    text = text.replace("sample = 36", f"sample = {SAMPLE}")
    scenario.write_text(text, encoding="utf-8")
    return project


@pytest.fixture(scope="module")
def labelled(tmp_path_factory, pi_installation) -> Path:
    """The demo run, its people form filled by the test, and run again: the project."""
    project = two_cell_demo(tmp_path_factory.mktemp("judge"), pi_installation.root.parents[1])
    first = snakemake(project, timeout=1200)
    assert first.returncode == 0, first.stderr[-3000:]
    results = project / "results" / "demo"
    blank = (results / "forms" / "people.blank.toml").read_text(encoding="utf-8")
    keys = json.loads((results / ".form-keys" / "people.json").read_text())["runs"]
    ids = [line.split('"')[1] for line in blank.splitlines() if line.startswith("[runs.")]
    assert len(ids) == SAMPLE
    # The person: every run of `rule` is on task, no run of `nothing` is (the judge, blind to
    # the cell, says true to about 9 in 10 of both: it disagrees often).
    lines = []
    for form_id in ids:
        answer = "true" if keys[form_id].startswith("rule") else "false"
        lines += [f'[runs."{form_id}"]', f"on_task_person = {answer}", ""]
    (results / "forms" / "people.toml").write_text("\n".join(lines), encoding="utf-8")
    second = snakemake(project, timeout=1200)
    assert second.returncode == 0, second.stderr[-3000:]
    counts = job_counts(second.stdout + second.stderr)
    assert counts.get("ingest_form") == 1 and "run_agent" not in counts, counts
    return project


def measures(project: Path) -> list[dict]:
    paths = sorted((project / "results" / "demo" / "runs").glob("*/r*/measures.json"))
    assert len(paths) == 2 * REPETITIONS
    return [json.loads(path.read_text()) for path in paths]


def section(project: Path, title: str) -> str:
    text = (project / "results" / "demo" / "synthesis.md").read_text(encoding="utf-8")
    return text.split(title, 1)[1].split("\n## ", 1)[0]


def by_hand(project: Path) -> dict:
    """κ, the corrected rates and their gap, from the measures and the answers alone."""
    valid = [m for m in measures(project) if m["status"] == "valid"]
    judge = {c: [m["metrics"]["on_task"] for m in valid if m["cell"] == c] for c in CELLS}
    pairs = {
        c: [
            (m["extra"]["on_task_person"], m["metrics"]["on_task"])
            for m in valid
            if m["cell"] == c and "on_task_person" in m["extra"]
        ]
        for c in CELLS
    }
    every = pairs["nothing"] + pairs["rule"]
    a = sum(p and j for p, j in every)
    b = sum(p and not j for p, j in every)
    c = sum(j and not p for p, j in every)
    d = sum(not p and not j for p, j in every)
    n = a + b + c + d
    agree, chance = (a + d) / n, ((a + b) * (a + c) + (c + d) * (b + d)) / n**2
    corrected = {
        cell: sum(judge[cell]) / len(judge[cell])
        + sum(int(p) - int(j) for p, j in pairs[cell]) / len(pairs[cell])
        for cell in CELLS
    }
    return {
        "table": (a, b, c, d),
        "kappa": (agree - chance) / (1 - chance),
        "corrected": corrected,
        "judge": judge,
        "pairs": pairs,
    }


CELLS = ("nothing", "rule")


def test_kappa_the_corrected_rates_and_their_verdict_as_computed_by_hand(labelled):
    expected = by_hand(labelled)
    text = section(labelled, "## The judge against people: `on_task`")
    a, b, c, d = expected["table"]
    assert a + b + c + d == SAMPLE  # every labelled run is valid
    assert b + c > 0  # the person disagrees with the judge somewhere
    assert f"| person true | {a} | {b} |" in text
    assert f"| person false | {c} | {d} |" in text
    assert f"Cohen's κ = {expected['kappa']:.2f}".replace("-", "−") in text
    for cell in CELLS:
        judge = expected["judge"][cell]
        row = (
            f"| {cell}{' (reference)' if cell == 'nothing' else ''} | {len(judge)} | "
            f"{100 * sum(judge) / len(judge):.0f}% | 9 | {100 * expected['corrected'][cell]:.0f}% |"
        )
        assert row in text, (row, text)
    # The verdict, from an independent resampling of the runs by index.
    rng = np.random.default_rng(1)

    def draws(cell: str) -> np.ndarray:
        judge = np.asarray(expected["judge"][cell], dtype=float)
        diffs = np.asarray([int(p) - int(j) for p, j in expected["pairs"][cell]], dtype=float)
        return judge[rng.integers(0, judge.size, (10_000, judge.size))].mean(axis=1) + diffs[
            rng.integers(0, diffs.size, (10_000, diffs.size))
        ].mean(axis=1)

    low, high = np.percentile(draws("rule") - draws("nothing"), [2.5, 97.5])
    gap = expected["corrected"]["rule"] - expected["corrected"]["nothing"]
    assert low > 0  # established, by hand
    [row] = [line for line in text.splitlines() if line.startswith("| rule |")][-1:]
    assert f"| +{100 * gap:.3g} pp |" in row and row.endswith("| **established** |"), row
    # Beside it, the judge's own gap, uncorrected. The judge is blind to the cell, so that gap
    # is chance alone, and chance establishes it now and then: its state is not asserted.
    judge = {cell: sum(expected["judge"][cell]) / len(expected["judge"][cell]) for cell in CELLS}
    raw = 100 * (judge["rule"] - judge["nothing"])
    number = r"\+?0" if raw == 0 else re.escape(f"{raw:+.3g}")
    assert re.search(rf"^\| rule \| {number} pp \((established|inconclusive)\) \|", row), row


def cells_csv(project: Path) -> dict[tuple[str, str], float]:
    with (project / "results" / "demo" / "cells.csv").open(encoding="utf-8", newline="") as f:
        return {
            (row["cell"], row["metric"]): float(row["value"])
            for row in csv.DictReader(f)
            if row["type"] == "rate" and row["task"] == "all"
        }


def panels(svg: Path) -> dict[str, list[ET.Element]]:
    """Each panel's elements, by its metric, in the figure's order."""
    found: dict[str, list[ET.Element]] = {}
    current = None
    for element in ET.fromstring(svg.read_text(encoding="utf-8")):
        title = element.text or ""
        if element.tag == f"{SVG}text" and ": rate against the median cost per run" in title:
            current = title.split(":")[0]
            found[current] = []
        elif current is not None:
            found[current].append(element)
    return found


def test_the_frontier_puts_each_cell_at_its_values(labelled):
    rates = cells_csv(labelled)
    tokens = {cell: [] for cell in CELLS}
    for m in measures(labelled):
        tokens[m["cell"]].append(m["builtin"]["input_tokens"] + m["builtin"]["output_tokens"])
    medians = {cell: float(np.median(found)) for cell, found in tokens.items()}
    found = panels(labelled / "results" / "demo" / "frontier.svg")
    assert list(found) == [m for m in ("tests_pass", "ran_tests", "scope_clean", "on_task")]
    for metric, elements in found.items():
        ticks = [e for e in elements if e.tag == f"{SVG}text" and e.get("font-size") == "10"]
        costs = [(float(t.text), float(t.get("x"))) for t in ticks if not t.text.endswith("%")]
        shares = [(float(t.text[:-1]) / 100, float(t.get("y")) - 4) for t in ticks if "%" in t.text]
        (c0, x0), (c1, x1) = costs[0], costs[-1]
        (r0, y0), (r1, y1) = shares[0], shares[-1]
        marks = [e for e in elements if e.tag == f"{SVG}g"]
        assert len(marks) == 2, metric
        for mark in marks:
            cell = mark.find(f"{SVG}title").text.split(":")[0]
            circle = mark.find(f"{SVG}circle")
            x = x0 + (medians[cell] - c0) * (x1 - x0) / (c1 - c0)
            y = y0 + (rates[cell, metric] - r0) * (y1 - y0) / (r1 - r0)
            assert float(circle.get("cx")) == pytest.approx(x, abs=0.01), (metric, cell)
            assert float(circle.get("cy")) == pytest.approx(y, abs=0.01), (metric, cell)
    words = section(labelled, "## Cost against rates")
    assert "cost in tokens per run (input + output): the offline model costs nothing" in words
    assert "is on the frontier" in words


def test_the_report_shows_them_in_a_browser(labelled):
    report = labelled / "results" / "demo" / "report"
    with Chromium() as browser:
        overview = browser.visit(report.joinpath("index.html").as_uri())
        cell = browser.visit(browser.link_target(overview.url, "rule"))
    assert "The judge against people: on_task" in overview.text
    assert "Cohen's κ = " in overview.text and "Corrected rates" in overview.text
    assert "Cost against rates" in overview.text
    assert "the offline model costs nothing" in overview.text
    assert any(url.endswith("/frontier.svg") for url in overview.requests), overview.requests
    for visit in (overview, cell):
        assert visit.errors == [], (visit.url, visit.errors)
        assert visit.broken_images == [], (visit.url, visit.broken_images)
        fetched = [url for url in visit.requests if not url.startswith(("file://", "data:"))]
        assert fetched == [], fetched
