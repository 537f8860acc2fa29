"""Planning repetitions by simulation under the verdict's own rule."""

from __future__ import annotations

import numpy as np
import pytest

from agentab import stats
from agentab.errors import AgentabError
from agentab.metrics import MEDIAN, RATE
from agentab.planning.power import (
    Population,
    repetitions_needed,
    simulated_power,
    smallest_repetitions,
)
from agentab.stats import resampling
from tests.unit.test_synthesis import write_run, write_scenario

FAST = {"simulations": 100, "draws": 2_000}


def pilot(folder, reference_rate_runs, rule_rate_runs, repetitions=10):
    write_scenario(folder, repetitions=repetitions)
    for rep in range(1, repetitions + 1):
        write_run(
            folder, "nothing", rep, {"ran_tests": rep <= reference_rate_runs, "turns": 5 + rep % 3}
        )
        write_run(folder, "rule", rep, {"ran_tests": rep <= rule_rate_runs, "turns": 5 + rep % 3})
    return folder


def test_a_large_pilot_gap_needs_few_repetitions_and_reaches_the_power(tmp_path):
    rows = repetitions_needed(pilot(tmp_path / "r", 2, 9), metrics=["ran_tests"], **FAST)
    [row] = rows
    assert (row.cell, row.kind, row.gap) == ("rule", RATE, pytest.approx(0.7))
    assert row.repetitions is not None and row.repetitions <= 10
    assert row.power >= 0.8


def test_a_smaller_gap_needs_more_repetitions(tmp_path):
    folder = pilot(tmp_path / "r", 3, 7)
    small = repetitions_needed(folder, gap=0.2, metrics=["ran_tests"], **FAST)[0]
    large = repetitions_needed(folder, gap=0.5, metrics=["ran_tests"], **FAST)[0]
    assert large.repetitions < small.repetitions


def test_a_pilot_without_a_gap_says_so(tmp_path):
    [row] = repetitions_needed(pilot(tmp_path / "r", 2, 9), metrics=["turns"], **FAST)
    assert row.repetitions is None
    assert "no gap" in row.note


def test_a_rate_cannot_be_planned_past_one(tmp_path):
    [row] = repetitions_needed(pilot(tmp_path / "r", 9, 9), gap=0.5, metrics=["ran_tests"], **FAST)
    assert row.repetitions is None
    assert "cannot move" in row.note


def test_a_shifted_median_is_planned_in_the_metric_unit(tmp_path):
    [row] = repetitions_needed(pilot(tmp_path / "r", 2, 9), gap=3, metrics=["turns"], **FAST)
    assert row.kind == MEDIAN
    assert row.repetitions is not None and row.repetitions <= 10


def test_planning_is_reproducible(tmp_path):
    folder = pilot(tmp_path / "r", 3, 7)
    assert repetitions_needed(folder, metrics=["ran_tests"], **FAST) == repetitions_needed(
        folder, metrics=["ran_tests"], **FAST
    )


def test_an_unknown_metric_is_a_clear_error(tmp_path):
    with pytest.raises(AgentabError, match="no metric named tests_ran"):
        repetitions_needed(pilot(tmp_path / "r", 2, 9), metrics=["tests_ran"], **FAST)


def test_a_power_outside_zero_one_is_a_clear_error(tmp_path):
    with pytest.raises(AgentabError, match="between 0 and 1"):
        repetitions_needed(pilot(tmp_path / "r", 2, 9), power=80, **FAST)


def test_simulated_power_under_the_null_stays_near_the_false_positive_rate():
    same = Population(RATE, np.empty(0), rate=0.5)
    power = simulated_power(
        same, same, 10, resampling.generator_for("null"), simulations=400, draws=2_000
    )
    assert power <= 0.08


def test_an_extreme_median_gap_needs_very_few_repetitions():
    certain = Population(MEDIAN, np.array([10.0, 10.0, 11.0]))
    never = Population(MEDIAN, np.array([0.0, 1.0, 0.0]))
    n, power = smallest_repetitions(
        certain, never, "extreme", power=0.8, max_repetitions=20, simulations=50, draws=1_000
    )
    assert n is not None and n <= 4 and power >= 0.8


def test_the_plan_command_takes_a_gap_per_metric_and_cautions_on_a_small_pilot(tmp_path, capsys):
    from agentab.cli import main

    folder = pilot(tmp_path / "r", 2, 9, repetitions=6)
    quick = ["--simulations", "20", "--max-repetitions", "10"]
    assert main(["plan", str(folder), "--gap", "0.5", "--gap", "turns=3", *quick]) == 0
    lines = capsys.readouterr().out.splitlines()
    planned = {line.split()[0]: line for line in lines[3:5]}
    assert "+50 pp" in planned["ran_tests"] and "+3 " in planned["turns"]
    assert lines[-1] == (
        "pilot: these estimates come from 6 valid runs per cell: rough. Below 20 runs a pilot "
        "knows a rate only to about ±20 pp or worse (and a median no better), so the "
        "repetitions above may be far off; a larger pilot gives a firmer answer."
    )
    # A bare size is a proportion: it is not applied to turns, which has a unit of its own.
    assert main(["plan", str(folder), "--gap", "0.5", *quick]) == 0
    out = capsys.readouterr().out
    assert out.startswith("not planned: turns, in units of their own (--gap turns=SIZE)")
    assert "\nturns " not in out


def test_the_plan_command_prices_the_planned_repetitions_from_the_pilots_cost(tmp_path, capsys):
    import json

    from agentab.cli import main

    folder = pilot(tmp_path / "r", 2, 9, repetitions=6)
    for measures in folder.glob("runs/*/r*/measures.json"):
        data = json.loads(measures.read_text())
        data["builtin"] = {"cost_usd": 0.02 if data["cell"] == "rule" else 0.01}
        measures.write_text(json.dumps(data))
    quick = ["--simulations", "20", "--max-repetitions", "10", "--metric", "ran_tests"]
    assert main(["plan", str(folder), *quick]) == 0
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if line.startswith("cost: ")]
    repetitions = int(line.split()[1])
    assert line == (
        f"cost: {repetitions} repetitions × 2 cells = {2 * repetitions} runs ≈ "
        f"{repetitions * 0.03:.4f} USD, at each cell's mean cost per run in the pilot "
        "(0.0100 to 0.0200 USD, from 12 runs with a cost); the pilot's own runs cost 0.1800 "
        "USD. Set [protocol] budget_usd in the scenario to cap it."
    )
    assert out.rstrip().splitlines()[-1].startswith("pilot: these estimates come from")


def two_task_pilot(folder, repetitions=5):
    from tests.unit.test_tasks_synthesis import fill_two_tasks, write_folder

    write_folder(folder, repetitions=repetitions)
    fill_two_tasks(folder)
    return folder


def test_with_tasks_the_plan_judges_the_pooled_gap_over_tasks(tmp_path):
    """The pilot gap is the pooled one (rates (5/5 + 1/5) / 2 against (3/5 + 0/5) / 2), and
    n counts repetitions per cell and task: below the per-task minimum no gap is established."""
    folder = two_task_pilot(tmp_path / "r")
    [row] = repetitions_needed(folder, metrics=["ran_tests"], **FAST)
    assert (row.cell, row.gap) == ("rule", pytest.approx(0.3))
    assert (row.pilot_n_cell, row.pilot_n_ref) == (10, 10)
    assert row.repetitions is not None and 2 * row.repetitions >= stats.MIN_RUNS_PER_GROUP
    assert row.power >= 0.8


def test_with_tasks_a_median_gap_is_pooled_on_the_log_scale(tmp_path):
    folder = two_task_pilot(tmp_path / "r")
    [row] = repetitions_needed(folder, metrics=["turns"], **FAST)
    assert row.gap == pytest.approx(40**0.5 - 72**0.5)


def test_with_tasks_a_rate_gap_is_capped_in_a_task_it_would_pass(tmp_path):
    folder = two_task_pilot(tmp_path / "r")
    [row] = repetitions_needed(folder, gap=0.5, metrics=["ran_tests"], **FAST)
    assert row.note == "the rate is capped at 1 in easy"
    assert row.repetitions is not None


def test_the_plan_command_counts_repetitions_per_cell_and_task(tmp_path, capsys):
    import json

    from agentab.cli import main

    folder = two_task_pilot(tmp_path / "r")
    for measures in folder.glob("runs/*/r*/measures.json"):
        data = json.loads(measures.read_text())
        data["builtin"] = {"cost_usd": 0.01}
        measures.write_text(json.dumps(data))
    quick = ["--simulations", "20", "--max-repetitions", "10", "--metric", "ran_tests"]
    assert main(["plan", str(folder), *quick]) == 0
    out = capsys.readouterr().out
    assert out.startswith("repetitions per cell and task for a 80% chance of an established")
    assert "over the 2 tasks (easy, hard)" in out.splitlines()[0]
    [line] = [line for line in out.splitlines() if line.startswith("cost: ")]
    repetitions = int(line.split()[1])
    assert f"{repetitions} repetitions × 2 cells × 2 tasks = {4 * repetitions} runs" in line
    assert "from 10 valid runs per cell over all its tasks" in out


def test_below_the_pooled_minimums_no_simulated_gap_is_established():
    """2 tasks × 4 runs is 8 runs per cell, below the 9 a gap needs; 2 × 5 is enough."""
    from agentab.planning.power import simulated_power_over_tasks

    certain = [Population(RATE, np.empty(0), rate=1.0)] * 2
    never = [Population(RATE, np.empty(0), rate=0.0)] * 2
    rng = resampling.generator_for("minimum")
    assert simulated_power_over_tasks(certain, never, 4, rng, simulations=20, draws=500) == 0
    assert simulated_power_over_tasks(certain, never, 5, rng, simulations=20, draws=500) == 1


def test_simulated_pooled_power_under_the_null_stays_near_the_false_positive_rate():
    from agentab.planning.power import simulated_power_over_tasks

    same = [Population(RATE, np.empty(0), rate=rate) for rate in (0.2, 0.5, 0.8)]
    rng = resampling.generator_for("null over tasks")
    assert simulated_power_over_tasks(same, same, 5, rng, simulations=300, draws=2_000) <= 0.08
