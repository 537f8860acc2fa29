"""The benchmarks and simulations run in their quick mode as part of the suite, so they cannot
rot, and the tables the docs publish are the ones the simulation computes.

Budgets are checked by the full runs (`python benchmarks/<name>.py`), never by a timed test:
the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted(
    [*(ROOT / "benchmarks").glob("bench_*.py"), *(ROOT / "benchmarks").glob("sim_*.py")]
)


@pytest.mark.slow
@pytest.mark.parametrize("script", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_benchmark_runs_in_quick_mode(script: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.strip(), "a benchmark prints its figures"


def sim_tasks():
    spec = importlib.util.spec_from_file_location("sim_tasks", ROOT / "benchmarks" / "sim_tasks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def rows_of(text: str, heading: str) -> list[list[str]]:
    """The body rows of the first Markdown table after `heading`, as lists of cells."""
    block = text.split(heading, 1)[1].split("\n\n|", 1)[1].split("\n\n", 1)[0]
    lines = ("|" + block).splitlines()
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def test_the_docs_publish_the_simulations_full_grid() -> None:
    """docs/synthesis.md's tables are what `python benchmarks/sim_tasks.py` prints: the same
    metrics, layouts, runs and tasks, every entry filled, and the power table's metrics."""
    sim = sim_tasks()
    text = (ROOT / "docs" / "synthesis.md").read_text(encoding="utf-8")
    header = text.split("### False positives under the null", 1)[1].split("\n\n|", 1)[1]
    columns = [cell.strip() for cell in header.splitlines()[0].strip("|").split("|")][3:]
    assert columns == [f"{t} task{'s' * (t > 1)}" for t in sim.TASKS]
    rows = rows_of(text, "### False positives under the null")
    expected = [
        (name, layout, str(n)) for name in sim.NULLS for layout in sim.LAYOUTS for n in sim.RUNS
    ]
    assert [tuple(row[:3]) for row in rows] == expected
    for row in rows:
        assert all(re.fullmatch(r"—|\d+\.\d%", entry) for entry in row[3:]), row
    power = rows_of(text, "### Power beside the stratified tests")
    assert [(row[0], row[1]) for row in power] == [
        (name, f"{t} × {n}") for name in sim.POWER for t, n in sim.POWER_SHAPES
    ]


def test_the_simulations_van_elteren_test_is_wilcoxons_with_one_task() -> None:
    """With one task van Elteren's test is the rank-sum test: scipy's Mann-Whitney U, normal
    approximation with ties corrected, no continuity correction."""
    from scipy.stats import mannwhitneyu

    sim = sim_tasks()
    cell, reference = [3.0, 5, 5, 8, 9, 12], [1.0, 2, 5, 6, 6, 7, 7]
    expected = mannwhitneyu(cell, reference, method="asymptotic", use_continuity=False).pvalue
    assert sim.van_elteren_p([cell], [reference]) == pytest.approx(expected)


def load_benchmark(name: str):
    """A benchmark as a module, importing its neighbours as `python benchmarks/<name>.py` does."""
    folder = str(ROOT / "benchmarks")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_docs_publish_the_sequential_simulation() -> None:
    """docs/synthesis.md's sequential tables have the rows and columns
    `python benchmarks/sim_sequential.py` prints, every entry filled."""
    sim = load_benchmark("sim_sequential")
    text = (ROOT / "docs" / "synthesis.md").read_text(encoding="utf-8")
    heading = "#### False positives, a look after every wave"
    header = text.split(heading, 1)[1].split("\n\n|", 1)[1].splitlines()[0]
    columns = [cell.strip() for cell in header.strip("|").split("|")][1:]
    assert columns == [
        f"{t} task{'s' * (t > 1)}, wave {w}, max {m}" for w, m in sim.PLANS for t in sim.TASKS
    ]
    rows = rows_of(text, heading)
    assert [row[0] for row in rows] == list(sim.NULLS)
    for row in rows:
        assert all(re.fullmatch(r"\d+\.\d% ± \d+\.\d", entry) for entry in row[1:]), row
        # The published shares keep the 5%: none above it by more than its own error.
        assert all(float(e.split("%")[0]) - float(e.split("± ")[1]) <= 5 for e in row[1:]), row
    power = rows_of(text, "#### Power and runs against the fixed rule")
    assert [(row[0], row[1]) for row in power] == [
        (name, f"{w}, {m}") for name in sim.POWER for w, m in sim.PLANS
    ]
