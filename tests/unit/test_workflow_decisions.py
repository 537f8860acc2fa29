"""The workflow's decision layer (`agentab.workflow`): targets, and each rule's own params.

A rule reruns when its params change, so each rule must get only its own slice of the
scenario: these tests pin which edit reaches which params."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.workflow import Workflow

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
DEMO = SCENARIOS / "demo" / "scenario.toml"


def workflow(*paths: Path, **config) -> Workflow:
    return Workflow.from_config(
        {"scenarios": [str(p) for p in paths], "results": "results", "state": ".agentab", **config}
    )


def test_targets_are_the_synthesis_and_the_blank_forms_of_every_scenario():
    targets = workflow(DEMO).targets()
    assert "results/demo/synthesis.md" in targets and "results/demo/gaps.csv" in targets
    assert "results/demo/forms/review.blank.toml" in targets
    assert len(workflow(DEMO).all_measures("demo")) == 4 * 10


def test_an_agent_runs_params_name_no_validator_and_differ_by_cell():
    flow = workflow(DEMO)
    plain, rule = (json.loads(flow.run_params("demo", c)) for c in ("nothing-off", "rule-off"))
    assert "validator" not in json.dumps(plain) and "tests" not in json.dumps(plain)
    assert plain["bricks"] == [] and rule["bricks"][0]["rel"] == "bricks/run-tests.md"
    assert plain["etalon"] == rule["etalon"] == {"repo": "calc.bundle", "tag": "v1.0"}


def test_a_validators_params_are_its_own_table_and_files_only():
    flow = workflow(DEMO)
    tests = json.loads(flow.validator_params("demo", "tests"))
    assert tests["validator"]["name"] == "tests" and list(tests["files"]) == ["validators/tests.py"]
    assert flow.validator_params("demo", "tests") != flow.validator_params("demo", "scope")
    assert json.loads(flow.measure_params("demo"))["metrics"][0] == "tests_pass"
    assert flow.scored_validators("demo") == ["tests", "behaviour", "scope", "on_task"]
    assert flow.form_validators("demo") == ["review"]


def test_each_cell_waits_for_its_own_harness_install():
    flow = workflow(SCENARIOS / "harness-axis" / "scenario.toml")
    name = next(iter(flow.scenarios))
    markers = {flow.harness_marker(name, cell.slug) for cell in flow.scenarios[name].cells}
    assert {Path(m).parts[-3] for m in markers} == {"pi", "claude-code"}


def test_two_scenarios_of_one_name_are_refused():
    with pytest.raises(AgentabError, match="two scenarios are named `demo`"):
        workflow(DEMO, DEMO)


def test_the_judge_settings_are_operational_and_taken_from_the_config():
    flow = workflow(DEMO, judge_base_url="http://127.0.0.1:9", credentials="c.toml")
    assert flow.judge_settings() == {
        "judge_base_url": "http://127.0.0.1:9",
        "credentials": "c.toml",
    }
    assert flow.credentials_argument().startswith("--credentials /")
