"""The report, the progress line and `agentab redo`, on a real workflow run of the demo.

The real snakemake runs the real pi binary against the offline model (2 repetitions); the
report it leaves is opened in a real browser (Debian's headless Chromium, driven through the
DevTools protocol), and the test reads what a person sees.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.browser import Chromium
from tests.e2e.workflow import REPO, SNAKEMAKE, job_counts, make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CELL_NAMES = ["nothing · off", "nothing · high", "rule · off", "rule · high"]
PROGRESS = re.compile(
    r"^agentab: (\d+)/8 runs · \d+ faults? · \S+( · ~\S+ left)? · \S+ tokens"
    r" · no cost \(offline model\)$",
    re.M,
)


@pytest.fixture(scope="module")
def finished(tmp_path_factory, pi_installation) -> tuple[Path, str]:
    """The demo (2 repetitions) run once by snakemake; its project and everything it printed."""
    project = make_project(tmp_path_factory.mktemp("report"), pi_installation.root.parents[1])
    result = snakemake(project)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    return project, output


def results_of(project: Path) -> Path:
    return project / "results" / "demo"


def agentab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).parent / "agentab"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def test_the_workflow_prints_progress_in_runs(finished) -> None:
    _, output = finished
    counts = [int(match.group(1)) for match in PROGRESS.finditer(output)]
    assert counts, output[-3000:]
    assert counts == sorted(counts) and counts[-1] == 8
    assert "USD" not in "\n".join(line for line in output.splitlines() if "runs ·" in line)


def test_the_workflow_leaves_the_report_after_the_synthesis(finished) -> None:
    project, _ = finished
    results = results_of(project)
    assert (results / "report" / "index.html").stat().st_mtime >= (
        results / "synthesis.md"
    ).stat().st_mtime
    assert len(list((results / "report" / "runs").glob("*/r*.html"))) == 8
    # the synthesis counts no dollars for the offline model
    assert "no cost (the offline model costs nothing)" in (results / "synthesis.md").read_text()


def test_a_person_sees_cells_verdicts_and_a_runs_conversation_and_diff(finished) -> None:
    project, _ = finished
    report = results_of(project) / "report"
    run = next(
        json.loads(path.read_text())
        for path in sorted(results_of(project).glob("runs/rule-off/r*/run.json"))
    )
    final_message = run["facts"]["final_message"]
    patch = (results_of(project) / "runs" / run["run"] / "result.patch").read_text()
    added = next(
        line for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")
    )
    with Chromium() as browser:
        overview = browser.visit(report.joinpath("index.html").as_uri())
        cell_url = browser.link_target(overview.url, "rule · off")  # one click from the overview
        cell = browser.visit(cell_url)
        run_url = browser.link_target(cell_url, run["run"])  # one click from its cell
        run_page = browser.visit(run_url)
    for name in CELL_NAMES:
        assert name in overview.text
    assert re.search(r"\b(established|inconclusive)\b", overview.text)
    # The answer first, above the tables (2 runs a cell here: too few for a verdict, said so).
    answer = overview.text.split("Answer", 1)[1].split("Matrix", 1)[0]
    assert "No gap is established" in answer, answer
    # Why: the behaviour measured from the trajectories, beside the outcomes, and where each
    # cell's calls went.
    behaviour = overview.text.split("Behaviour: why the cells differ", 1)[1]
    assert "Outcomes" in behaviour and "Where each cell's calls went" in behaviour, behaviour
    assert "tests" in behaviour.split("Where each cell's calls went", 1)[1]
    assert run["run"] in cell.text and "valid" in cell.text
    assert run_url.endswith(f"report/runs/{run['run']}.html")
    assert final_message and final_message in run_page.text
    assert added in run_page.text
    assert "The function `mean` in calc.py returns wrong results." in run_page.text  # the task
    for visit in (overview, cell, run_page):
        assert visit.errors == [], (visit.url, visit.errors)
        assert visit.broken_images == [], (visit.url, visit.broken_images)
        fetched = [url for url in visit.requests if not url.startswith(("file://", "data:"))]
        assert fetched == [], f"{visit.url} fetched {fetched}"  # offline: nothing from the net


def test_runs_lists_every_run_of_the_demo(finished) -> None:
    project, _ = finished
    result = agentab("runs", "results/demo", cwd=project)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1 + 8
    assert "8 runs: 8 valid" in result.stderr


def test_redo_one_run_then_snakemake_redoes_that_run_and_nothing_else(
    finished, tmp_path: Path
) -> None:
    source, _ = finished
    project = tmp_path / "project"
    subprocess.run(["cp", "-a", str(source), str(project)], check=True)
    results = results_of(project)
    others = {
        path: path.stat().st_mtime_ns
        for path in results.glob("runs/*/r*/run.json")
        if "rule-off/r02" not in path.as_posix()
    }
    assert len(others) == 7  # 4 cells x 2 repetitions, less the one redone
    redo = agentab("redo", "results/demo", "rule-off/r02", cwd=project)
    assert redo.returncode == 0, redo.stderr
    assert "redo rule-off/r02" in redo.stdout
    assert not (results / "runs" / "rule-off" / "r02" / "run.json").exists()
    # The command it prints is the one that redoes it, run as a person pastes it: the folder
    # was copied, so not the command that ran the original.
    printed = redo.stdout.splitlines()[-1].strip()
    assert printed == "snakemake --cores all", redo.stdout
    again = subprocess.run(
        # (with Snakemake's listing, to count its jobs: the default shows agentab's lines only)
        ["bash", "-c", printed.replace("snakemake", str(SNAKEMAKE), 1) + " --quiet=host"],
        cwd=project, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert job_counts(again.stdout + again.stderr) == {
        "run_agent": 1,
        "validate_run": 4,
        "measure_run": 1,
        "synthesize": 1,
        "form_blank": 2,  # review, and people (the judge checked against people)
        "report": 1,
    }
    assert {path: path.stat().st_mtime_ns for path in others} == others
    assert (results / "runs" / "rule-off" / "r02" / "measures.json").exists()
    assert (results / "report" / "runs" / "rule-off" / "r02.html").exists()
    nothing_left = snakemake(project, "-n")
    assert job_counts(nothing_left.stdout + nothing_left.stderr) == {}
    # That invocation ran this folder: the next redo prints it, word for word.
    redo = agentab("redo", "results/demo", "rule-off/r01", cwd=project)
    assert redo.stdout.splitlines()[-1].strip() == f"{SNAKEMAKE} --cores all --quiet=host", (
        redo.stdout
    )


def test_editing_a_report_template_rebuilds_only_the_report(finished) -> None:
    project, _ = finished
    template = REPO / "src" / "agentab" / "templates" / "report" / "run.html.j2"
    original = template.read_bytes()
    stat = template.stat()
    try:
        template.write_bytes(original + b"{# an edit #}\n")
        result = snakemake(project, "-n")
        assert result.returncode == 0, result.stderr[-2000:]
        assert job_counts(result.stdout + result.stderr) == {"report": 1}
    finally:
        template.write_bytes(original)
        os.utime(template, ns=(stat.st_atime_ns, stat.st_mtime_ns))
