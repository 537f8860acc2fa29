"""What `agentab check` prints, in words that agree with their numbers."""

from __future__ import annotations

from pathlib import Path

from agentab.commands.check import render_matrix
from agentab.scenario import load_scenario

DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo" / "scenario.toml"


def test_one_validator_is_one_validator() -> None:
    scenario = load_scenario(DEMO, check_etalon=False)
    scenario.validators = {"scope": scenario.validators["scope"]}
    assert "(an agent run, 1 validator and a measure per run)" in render_matrix(scenario, [])
    scenario = load_scenario(DEMO, check_etalon=False)
    assert "(an agent run, 4 validators and a measure per run)" in render_matrix(scenario, [])
