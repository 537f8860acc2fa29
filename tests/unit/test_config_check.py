"""The workflow's config, checked: one line per problem, with its key and its fix."""

from __future__ import annotations

from pathlib import Path

from agentab.workflow.config_check import config_problems

SCHEMA = Path(__file__).resolve().parents[2] / "config" / "config.schema.yaml"


def test_a_scenario_path_given_as_a_string_is_told_to_be_a_list() -> None:
    (found,) = config_problems({"scenarios": "demo/scenario.toml"}, SCHEMA)
    assert found.key == "scenarios"
    assert found.message == "'demo/scenario.toml' is not of type 'array'"
    assert "--config 'scenarios=[\"scenarios/demo/scenario.toml\"]'" in found.fix


def test_an_unknown_key_lists_the_known_ones() -> None:
    (found,) = config_problems({"scenarios": ["a.toml"], "scenario": "x"}, SCHEMA)
    assert "'scenario' was unexpected" in found.message
    assert "scenarios" in found.fix and "results" in found.fix


def test_a_config_that_passes_has_no_problem() -> None:
    assert config_problems({"scenarios": ["a.toml"], "confinement": "bwrap"}, SCHEMA) == []
