"""measures.json from a run's record and its validators' outputs: status, contract, extras, forms."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agentab.scenario import load_scenario
from agentab.synthesis.runs.measures import build_measures
from agentab.validators import invalid_output, validator_output

SCENARIO = """
[scenario]
name = "m"
[task]
prompt = "Fix it."
[etalon]
repo = "nowhere"
tag = "v1"
[agent]
harness = "pi"
version = "1.6.0"
provider = "offline"
model = "demo"
thinking = "off"
timeout = "1m"
[protocol]
repetitions = 2
[protocol.limits]
memory = "2G"
processes = 256
disk = "1G"
patch = "1M"

[validation]
metrics = ["tests_pass", "turns", "readable"]
[validators.tests]
mode = "script"
run = ["tests.py"]
[validators.stream]
mode = "script"
run = ["stream.py"]
[validators.review]
mode = "form"
fills = ["readable"]
"""

RUN = {
    "etalon": {"sha": "abc"},
    "harness": "pi",
    "harness_version": "1.6.0",
    "outcome": {"status": "completed", "reason": None},
    "facts": {"tokens": {"input": 10, "output": 2}, "cost_usd": 0.01},
}


@pytest.fixture
def scenario(tmp_path: Path):
    path = tmp_path / "scenario.toml"
    path.write_text(textwrap.dedent(SCENARIO))
    return load_scenario(path, check_etalon=False, check_bricks=False)


def outputs(**extra_stream):
    return {
        "tests": validator_output("tests", "script", {"tests_pass": True}, {"tests_pass": "ok"}),
        "stream": validator_output("stream", "script", {"turns": 4} | extra_stream),
    }


def test_valid_run_keeps_contract_metrics_extras_and_pending(scenario) -> None:
    m = build_measures(scenario, scenario.cells[0], 1, RUN, outputs(lint=3))
    assert m["status"] == "valid" and m["run"] == "baseline/r01"
    assert m["metrics"] == {"tests_pass": True, "turns": 4}
    assert m["extra"] == {"lint": 3}
    assert m["pending"] == ["readable"]
    assert m["reasons"] == {"tests": {"tests_pass": "ok"}}
    assert m["provenance"]["etalon_sha"] == "abc" and m["provenance"]["tokens"]["input"] == 10


def test_failed_outcome_is_failed_not_scored(scenario) -> None:
    run = {**RUN, "outcome": {"status": "failed", "reason": "timeout"}}
    m = build_measures(scenario, scenario.cells[0], 2, run, outputs())
    assert m["status"] == "failed" and m["problems"] == ["timeout"] and m["metrics"] == {}


def test_a_validator_that_could_not_score_makes_the_run_invalid(scenario) -> None:
    broken = {**outputs(), "stream": invalid_output("stream", "script", "exit status 1: boom")}
    m = build_measures(scenario, scenario.cells[0], 1, RUN, broken)
    assert m["status"] == "invalid"
    assert "validator stream: exit status 1: boom" in m["problems"]
    assert "no validator returned the contract metric `turns`" in m["problems"]


def test_a_metric_returned_twice_is_a_problem_not_a_winner(scenario) -> None:
    m = build_measures(scenario, scenario.cells[0], 1, RUN, outputs(tests_pass=False))
    assert m["status"] == "invalid"
    assert m["metrics"]["tests_pass"] is True
    assert any("returned by both tests and stream" in p for p in m["problems"])


def test_form_answers_fill_and_never_overwrite(scenario) -> None:
    m = build_measures(
        scenario, scenario.cells[0], 1, RUN, outputs(), {"review": {"readable": True}}
    )
    assert m["metrics"]["readable"] is True and m["pending"] == [] and m["status"] == "valid"
    clash = build_measures(scenario, scenario.cells[0], 1, RUN, outputs(), {"review": {"turns": 9}})
    assert clash["metrics"]["turns"] == 4 and clash["status"] == "invalid"
    assert any("a form may not overwrite it" in p for p in clash["problems"])


def test_a_contract_metric_returned_as_null_makes_the_run_invalid(scenario) -> None:
    m = build_measures(scenario, scenario.cells[0], 1, RUN, outputs(turns=None))
    assert m["status"] == "invalid" and "turns" not in m["metrics"]
    assert any("returned null for the contract metric `turns`" in p for p in m["problems"])
