"""The budget: its ledger under runs racing to start, the price table, and what a run the
budget did not start looks like to every reader."""

from __future__ import annotations

import json
import multiprocessing
import random
import time
from pathlib import Path

import pytest

from agentab.budget import BUDGET_REACHED, NOT_STARTED, Ledger, read_ledger
from agentab.budget.costs import attempt_cost, run_cost
from agentab.errors import AgentabError
from agentab.files import results_secret, write_sealed_json
from agentab.offline_model.policy import load_policy
from agentab.prices import TABLE_DATE, Price, priced_models, table_price
from agentab.scenario import load_scenario
from agentab.synthesis.runs.measures import build_measures
from agentab.synthesis.runs.results import missing_runs, read_runs

BUDGET = 1.0
DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo" / "scenario.toml"


@pytest.fixture
def demo_scenario():
    return load_scenario(DEMO, check_etalon=False, check_bricks=False)


def race(results: str, worker: int, runs: int) -> dict:
    """One process of a workflow's run steps: reserve, work a little, settle; the invariant
    is checked under the ledger's lock after every start."""
    ledger = Ledger(Path(results), BUDGET, planned_runs=40)
    rng = random.Random(worker)
    started = refused = 0
    worst = 0.0
    for rep in range(1, runs + 1):
        run = f"cell-{worker % 2}/r{worker:02d}{rep:02d}"
        decision = ledger.reserve(run, f"cell-{worker % 2}")
        if not decision.started:
            refused += 1
            continue
        started += 1
        with ledger.changing() as state:
            worst = max(worst, state.spent_usd + state.in_flight_usd)
        time.sleep(rng.uniform(0, 0.01))
        # A run costs at most what was reserved for it (the mean of its cell's runs, or the
        # even share): then spent + in flight can never pass the budget.
        ledger.settle(run, decision.estimate_usd * rng.uniform(0.97, 1.0), "test", "outcome")
    return {"started": started, "refused": refused, "worst": worst}


def test_runs_racing_to_start_never_reserve_past_the_budget(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    with context.Pool(6) as pool:
        results = pool.starmap(race, [(str(tmp_path), worker, 12) for worker in range(6)])
    state = read_ledger(tmp_path / "budget.json")
    started = sum(result["started"] for result in results)
    assert max(result["worst"] for result in results) <= BUDGET + 1e-9
    assert state.spent_usd <= BUDGET + 1e-9
    assert len(state.spent) == started  # no settlement lost to a race
    assert not state.in_flight
    assert sum(result["refused"] for result in results) == len(state.not_started) > 0
    assert started >= 20  # the budget was used, not refused from the start


def test_the_estimate_is_the_cells_mean_then_the_scenarios_then_the_even_share(
    tmp_path: Path,
) -> None:
    ledger = Ledger(tmp_path, 2.0, planned_runs=8)
    first = ledger.reserve("a/r01", "a")
    assert (first.estimate_usd, first.estimate_from) == (0.25, "budget_usd / 8 runs planned")
    ledger.settle("a/r01", 0.1, "reported by the harness", "outcome")
    other = ledger.reserve("b/r01", "b")
    assert other.estimate_usd == pytest.approx(0.1)
    assert other.estimate_from == "the mean of 1 finished runs"
    ledger.settle("b/r01", 0.3, "test", "outcome")
    ledger.settle("a/r02", 0.9, "test", "fault")  # a fault is spent, but is no run's mean
    assert ledger.reserve("a/r03", "a").estimate_usd == pytest.approx(0.1)
    assert read_ledger(tmp_path / "budget.json").spent_usd == pytest.approx(1.3)


def test_a_cost_nobody_can_tell_counts_at_its_estimate(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, 1.0, planned_runs=4)
    ledger.reserve("a/r01", "a")
    assert ledger.settle("a/r01", None, None, "outcome") == 0.25
    assert read_ledger(tmp_path / "budget.json").spent[0]["how"].startswith("its estimate")


def test_a_refused_run_is_listed_and_reopened_once_the_budget_has_room(tmp_path: Path) -> None:
    tight = Ledger(tmp_path, 0.15, planned_runs=2)
    assert tight.reserve("a/r01", "a").started
    tight.settle("a/r01", 0.1, "test", "outcome")
    refused = tight.reserve("a/r02", "a")
    assert not refused.started
    assert refused.reason() == (
        f"{BUDGET_REACHED} (spent 0.1000 + in flight 0.00 + this run ~0.1000 > budget_usd 0.1500)"
    )
    assert tight.reopen() == []  # still no room
    assert read_ledger(tmp_path / "budget.json").not_started == ["a/r02"]
    assert Ledger(tmp_path, 0.5, planned_runs=2).reopen() == ["a/r02"]
    assert read_ledger(tmp_path / "budget.json").not_started == []


def test_reservations_a_killed_workflow_left_are_cleared(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, 1.0, planned_runs=4)
    ledger.reserve("a/r01", "a")
    assert ledger.clear_in_flight() == ["a/r01"]
    assert read_ledger(tmp_path / "budget.json").in_flight == {}
    # A retry of the same run replaces its own reservation rather than adding a second one.
    ledger.reserve("a/r02", "a")
    ledger.reserve("a/r02", "a")
    assert list(read_ledger(tmp_path / "budget.json").in_flight) == ["a/r02"]


# ------------------------------------------------------------------------------ prices


def test_the_price_table_is_dated_and_prices_codex_and_gemini_models() -> None:
    assert TABLE_DATE[:2] == "20" and len(TABLE_DATE) == 10
    sonnet = table_price("claude-sonnet-4-5-20250929")
    assert (sonnet.input, sonnet.output) == (3.0, 15.0)
    assert "anthropic.com" in sonnet.source and TABLE_DATE in sonnet.source
    assert table_price("gpt-5-codex") is not None  # Codex reports tokens only
    assert table_price("gemini-2.5-pro") is not None  # Gemini CLI too
    assert table_price("openai/gpt-5") == table_price("gpt-5")  # a gateway's vendor/ prefix
    assert table_price("no-such-model") is None
    assert "gpt-5" in priced_models()


def test_tokens_times_a_price_and_the_harness_figure_first() -> None:
    price = Price(3.0, 15.0, "test")
    tokens = {"input": 1_000_000, "output": 100_000, "cache_read": 0, "cache_write": 0}
    assert run_cost(None, tokens, price) == (pytest.approx(4.5), "tokens × test")
    assert run_cost(0.2, tokens, price) == (0.2, "reported by the harness")
    assert run_cost(None, tokens, None) == (None, None)


def test_a_faulted_attempt_costs_the_replies_its_log_recorded(tmp_path: Path) -> None:
    earlier = tmp_path / "earlier-attempts"
    earlier.mkdir()
    old = earlier / "attempt-1-model-requests.jsonl"
    old.write_text(json.dumps({"reply": {"usage": {"input": 9_000_000, "output": 0}}}) + "\n")
    before = {old}
    new = earlier / "attempt-2-model-requests.jsonl"
    reply = {"reply": {"usage": {"input": 1_000_000, "output": 0}}}
    new.write_text(json.dumps(reply) + "\n" + json.dumps(reply) + "\n")
    usd, how = attempt_cost(earlier, before, Price(1.0, 5.0, "test"))
    assert usd == pytest.approx(2.0)  # the old attempt was counted when it ended


def test_an_offline_policy_may_set_a_price(tmp_path: Path) -> None:
    assert load_policy("demo").price is None
    priced = load_policy("demo-priced").price
    assert (priced.input, priced.output) == (3.0, 15.0)
    bad = tmp_path / "bad.toml"
    bad.write_text('[policy]\nprice = { input = "a lot" }\n')
    with pytest.raises(AgentabError) as error:
        load_policy(str(bad))
    assert "policy.price" in error.value.render()
    assert "price = { input = 3.0, output = 15.0 }" in error.value.render()


# ----------------------------------------------------------- a run the budget did not start


def test_a_run_not_started_is_measured_as_such_and_listed_among_the_missing(
    tmp_path: Path, demo_scenario
) -> None:
    cell = demo_scenario.cells[0]
    reason = (
        f"{BUDGET_REACHED} (spent 0.0400 + in flight 0.00 + this run ~0.0100 > budget_usd 0.0450)"
    )
    record = {"outcome": {"status": NOT_STARTED, "reason": reason}, "facts": {}}
    measures = build_measures(demo_scenario, cell, 1, record, {}, {}, {})
    assert (measures["status"], measures["problems"]) == (NOT_STARTED, [reason])
    results = tmp_path / "results"
    folder = results / "runs" / cell.slug / "r01"
    write_sealed_json(measures, folder / "measures.json", results_secret(results / ".secret"))
    runs, bad = read_runs(results, demo_scenario)
    assert (runs, bad) == ([], [])
    missing = missing_runs(results, demo_scenario)
    assert missing[0].path == f"runs/{cell.slug}/r01"
    assert missing[0].reason == reason
    assert all(not other.reason for other in missing[1:])


def budget_scenario(tmp_path: Path, agent: str, budget: str = "budget_usd = 5.0") -> Path:
    import shutil

    folder = tmp_path / "scenario"
    shutil.copytree(DEMO.parent, folder)
    text = DEMO.read_text()
    text = text.replace("repetitions = 10\n", f"repetitions = 10\n{budget}\n")
    text = text.replace(
        'harness = "pi"\nversion = "1.6.0"\nprovider = "offline"        # agentab\'s offline model server, started per run\nmodel = "demo"',
        agent,
    )
    (folder / "scenario.toml").write_text(text)
    return folder / "scenario.toml"


def test_a_budget_is_refused_at_load_when_a_runs_cost_cannot_be_known(tmp_path: Path) -> None:
    unknown = 'harness = "codex"\nversion = "0.171.0"\nprovider = "openai"\nmodel = "gpt-9-preview"'
    with pytest.raises(AgentabError) as error:
        load_scenario(budget_scenario(tmp_path / "a", unknown), check_etalon=False)
    text = error.value.render()
    assert "protocol.budget_usd" in text
    assert "codex reports no cost" in text and "`gpt-9-preview`" in text
    assert "remove budget_usd" in text
    priced = 'harness = "codex"\nversion = "0.171.0"\nprovider = "openai"\nmodel = "gpt-5-codex"'
    scenario = load_scenario(budget_scenario(tmp_path / "b", priced), check_etalon=False)
    assert scenario.budget_usd == 5.0
    offline = 'harness = "pi"\nversion = "1.6.0"\nprovider = "offline"\nmodel = "demo-priced"'
    assert load_scenario(budget_scenario(tmp_path / "c", offline), check_etalon=False).budget_usd
    with pytest.raises(AgentabError) as error:
        load_scenario(budget_scenario(tmp_path / "d", offline, "budget_usd = 0"))
    assert "protocol.budget_usd" in error.value.render()


def test_runs_measured_before_the_budget_are_counted_when_the_ledger_is_made(
    tmp_path: Path,
) -> None:
    for rep, cost in ((1, 0.2), (2, None)):
        folder = tmp_path / "runs" / "a" / f"r0{rep}"
        folder.mkdir(parents=True)
        record = {"run": f"a/r0{rep}", "outcome": {"status": "completed"}, "cost": {"usd": cost}}
        (folder / "run.json").write_text(json.dumps(record))
    ledger = Ledger(tmp_path, 0.3, planned_runs=4)
    decision = ledger.reserve("a/r03", "a")
    assert decision.spent_usd == pytest.approx(0.2)
    assert decision.estimate_usd == pytest.approx(0.1)  # the mean of the two finished runs
    assert decision.started
    assert not ledger.reserve("a/r04", "a").started


def test_the_workflows_start_clears_stale_reservations_and_reopens_runs_with_room(
    tmp_path: Path, demo_scenario
) -> None:
    from dataclasses import replace
    from types import SimpleNamespace

    from agentab.budget.on_start import budget_on_start
    from agentab.layout import Layout
    from agentab.workflow.holding import workflow_holding

    results = tmp_path / "results" / "demo"
    raw = {**demo_scenario.raw, "protocol": {"repetitions": 10, "budget_usd": 0.2}}
    tight = replace(demo_scenario, raw=raw)
    workflow = SimpleNamespace(
        scenarios={"demo": tight},
        layout=Layout(tmp_path / "results", tmp_path / "state", tmp_path / "h"),
        scenario_file=lambda name: "demo/scenario.toml",
    )
    ledger = Ledger(results, 0.2, planned_runs=40)
    ledger.reserve("nothing-off/r01", "nothing-off")
    ledger.settle("nothing-off/r01", 0.08, "test", "outcome")
    assert ledger.reserve("nothing-off/r02", "nothing-off").started  # a killed workflow's
    assert not ledger.reserve("nothing-off/r03", "nothing-off").started
    ledger.settle("nothing-off/r04", 0.1, "test", "fault")
    held = results / "runs" / "nothing-off" / "r03"
    held.mkdir(parents=True)
    (held / "measures.json").write_text("{}")
    (held / "faults.jsonl").write_text("{}\n")
    (results / "synthesis.md").write_text("old")
    lines = budget_on_start(workflow, dry=False, held=workflow_holding)
    assert lines == [
        "agentab: demo: cleared 1 budget reservation a stopped workflow left (its runs had "
        "not ended)"
    ]
    assert (held / "measures.json").exists()  # 0.18 + 0.08 > 0.2: still no room
    raw["protocol"]["budget_usd"] = 1.0
    assert budget_on_start(workflow, dry=True, held=workflow_holding) == [
        "agentab: demo: would try again 1 run not started by the budget"
    ]
    assert (held / "measures.json").exists()  # a dry run only tells
    assert budget_on_start(workflow, dry=False, held=workflow_holding) == [
        "agentab: demo: 1 run not started by the budget is tried again: spent 0.1800 of "
        "budget_usd 1.00 USD"
    ]
    assert not (held / "measures.json").exists() and (held / "faults.jsonl").exists()
    assert not (results / "synthesis.md").exists()
