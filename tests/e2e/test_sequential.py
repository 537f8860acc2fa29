"""Sequential stopping on the demo, with the real pi binary and the real Snakemake: waves of 5
up to 30, the rule cells stop once `ran_tests` is established, the thinking cell (no effect)
runs to its maximum, a SIGTERM between waves resumes, and a finished workflow is up to date.

One workflow serves every assertion: it is stopped by SIGTERM once the first wave is decided,
run again to its end, and run a third time."""

from __future__ import annotations

import csv
import json
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.workflow import (
    ending_what_is_left,
    job_counts,
    make_project,
    snakemake,
    start_snakemake,
)
from tests.processes import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SEQUENTIAL = 'repetitions = 30\nstopping = "sequential"\nwave = 5\ndecide = ["ran_tests"]\n'
RESULTS = Path("results") / "demo"


@dataclass
class Waves:
    project: Path
    stopped_output: str
    stopped_code: int
    first_decision: str
    resumed: object  # the second invocation's CompletedProcess
    up_to_date: object  # the third's: the same command again


@pytest.fixture(scope="module")
def waves(tmp_path_factory, pi_installation) -> Waves:
    root = tmp_path_factory.mktemp("sequential")
    project = make_project(root / "project", pi_installation.root.parents[1], repetitions=30)
    toml = project / "demo" / "scenario.toml"
    toml.write_text(toml.read_text().replace("repetitions = 30\n", SEQUENTIAL, 1))
    decision = project / RESULTS / "waves" / "wave-1.json"
    output = root / "stopped.out"
    with ending_what_is_left(project):
        process = start_snakemake(project, output=output)
        assert wait_until(decision.exists, 600), output.read_text()[-3000:]
        first = decision.read_text()
        process.send_signal(signal.SIGTERM)  # between waves: wave 2 is starting
        process.wait(timeout=120)
    resumed = snakemake(project, timeout=900)
    return Waves(
        project, output.read_text(), process.returncode, first, resumed, snakemake(project)
    )


def gaps(project: Path) -> dict[tuple[str, str], dict]:
    with (project / RESULTS / "gaps.csv").open(newline="", encoding="utf-8") as file:
        return {(row["cell"], row["metric"]): row for row in csv.DictReader(file)}


def test_a_sigterm_between_waves_stops_and_the_next_invocation_resumes(waves: Waves) -> None:
    assert waves.stopped_code != 0
    assert "Traceback" not in waves.stopped_output
    assert waves.resumed.returncode == 0, waves.resumed.stdout[-3000:] + waves.resumed.stderr
    # The decision of wave 1 was kept, not made again.
    decision = waves.project / RESULTS / "waves" / "wave-1.json"
    assert decision.read_text() == waves.first_decision
    assert "Traceback" not in waves.resumed.stdout + waves.resumed.stderr


def test_the_rule_cells_stop_early_with_ran_tests_established(waves: Waves) -> None:
    found = gaps(waves.project)
    runs = waves.project / RESULTS / "runs"
    for cell, slug in (("rule · off", "rule-off"), ("rule · high", "rule-high")):
        assert found[cell, "ran_tests"]["verdict"] == "established", found[cell, "ran_tests"]
        made = len(list((runs / slug).glob("r*/measures.json")))
        assert made in (5, 10), (slug, made)


def test_the_thinking_cell_runs_to_its_maximum_and_stays_inconclusive(waves: Waves) -> None:
    found = gaps(waves.project)
    assert found["nothing · high", "ran_tests"]["verdict"] == "inconclusive"
    runs = waves.project / RESULTS / "runs"
    assert len(list((runs / "nothing-high").glob("r*/measures.json"))) == 30
    last = json.loads((waves.project / RESULTS / "waves" / "wave-6.json").read_text())
    assert last["next"] == [] and last["waves"]["nothing · high"] == 6
    text = (waves.project / RESULTS / "synthesis.md").read_text()
    assert "## Stopping: sequential" in text and "`ran_tests` at wave" in text


def test_a_finished_sequential_workflow_is_up_to_date(waves: Waves) -> None:
    assert waves.up_to_date.returncode == 0
    assert job_counts(waves.up_to_date.stdout) == {}, waves.up_to_date.stdout[-2000:]
    text = waves.up_to_date.stdout + waves.up_to_date.stderr
    assert "Nothing to be done" in text, text[-2000:]
    assert "have no measures" not in text  # the runs of waves never given are not missing
