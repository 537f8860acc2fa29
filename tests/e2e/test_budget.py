"""The budget through the real workflow and the real pi, on the offline model priced by its
policy (`demo-priced`, whose tokens cost what a real model's would): the budget stops the
workflow from starting further runs, never cuts one, and the workflow ends normally (exit 0)
with a synthesis of the runs that ran and a line saying what was held back and how to run it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.e2e.workflow import make_project, set_agent, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ONE_CELL = re.compile(r"(?ms)^\[axes\].*?(?=^\[validation\])")


def budget_project(tmp_path, harnesses, budget: float):
    """The demo as one cell of 4 runs on the priced policy, with a budget."""
    project = make_project(tmp_path / "project", harnesses, repetitions=4)
    set_agent(project, model="demo-priced", timeout="2m")
    scenario = project / "demo" / "scenario.toml"
    text = ONE_CELL.sub("", scenario.read_text())
    scenario.write_text(
        text.replace("repetitions = 4\n", f"repetitions = 4\nbudget_usd = {budget}\n")
    )
    return project, scenario


def agentab(project, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "agentab.cli", *args]
    return subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=120)


def test_the_budget_stops_further_runs_and_the_workflow_ends_normally(tmp_path, pi_installation):
    budget = 0.05  # the priced demo's runs cost 0.015 to 0.02 USD each: room for about 3 of 4
    project, scenario = budget_project(tmp_path, pi_installation.root.parents[1], budget)
    result = snakemake(project, "--resources", "agent_slots=1")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    results = project / "results" / "demo"
    runs = sorted((results / "runs" / "baseline").glob("r*"))
    measures = {run.name: json.loads((run / "measures.json").read_text()) for run in runs}
    statuses = [m["status"] for m in measures.values()]
    assert (
        1 <= statuses.count("valid") < 4
        and statuses.count("valid") + statuses.count("not-started") == 4
    ), statuses
    ledger = json.loads((results / "budget.json").read_text())
    for name, data in measures.items():
        record = json.loads((results / "runs" / "baseline" / name / "run.json").read_text())
        if data["status"] == "not-started":
            assert data["problems"][0].startswith("not started: budget reached (spent ")
            assert (results / "runs" / "baseline" / name / "stream.jsonl").stat().st_size == 0
            continue
        # Never cut mid-way: every run that started ran to its own end, and is priced.
        assert record["outcome"]["status"] == "completed", record["outcome"]
        assert record["cost"]["how"] == "reported by the harness"
        assert data["builtin"]["cost_usd"] > 0
    spent = sum(m["builtin"]["cost_usd"] for m in measures.values() if m["status"] == "valid")
    assert ledger["spent_usd"] == pytest.approx(spent) and not ledger["in_flight"]
    held = 4 - statuses.count("valid")
    # What a person reads: the progress line, the last line, the synthesis, `agentab runs`.
    assert f"{held} not started (budget reached) · spent " in out
    assert f"of {budget:.4f} USD budget" in out
    last = [line for line in out.splitlines() if line.startswith("agentab: demo: ")][-1]
    assert f"{4 - held}/4 runs measured ({4 - held} valid); {held} not started: budget " in last
    assert "raise [protocol] budget_usd in demo/scenario.toml and run the same command" in last
    assert "read results/demo/synthesis.md" in last
    synthesis = (results / "synthesis.md").read_text()
    assert f"**Budget reached**: {held} run" in synthesis
    assert ": not started: budget reached (spent " in synthesis
    listing = agentab(project, "runs", "results/demo")
    assert listing.returncode == 0, listing.stderr
    assert "not-started" in listing.stdout and "not started: budget reached" in listing.stdout
    assert f"{held} not-started" in listing.stderr

    # The same command again: the budget still has no room, so nothing runs.
    again = snakemake(project, "--resources", "agent_slots=1")
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert "run_agent" not in again.stdout + again.stderr

    # A raised budget: the runs held back are run now, and only they.
    scenario.write_text(scenario.read_text().replace(f"budget_usd = {budget}", "budget_usd = 1.0"))
    raised = snakemake(project, "--resources", "agent_slots=1")
    out = raised.stdout + raised.stderr
    assert raised.returncode == 0, out[-3000:]
    tried = (
        "1 run not started by the budget is"
        if held == 1
        else f"{held} runs not started by the budget are"
    )
    assert f"agentab: demo: {tried} tried again: spent " in out
    assert out.count("rule run_agent:") == held
    statuses = [json.loads((run / "measures.json").read_text())["status"] for run in runs]
    assert statuses == ["valid"] * 4
    assert "Budget reached" not in (results / "synthesis.md").read_text()
