"""`agentab tasks mine --scenario`: a file of the environment alone (setup, path, protect,
limits, the test runner) is whole for mining, and the mined scenario keeps its limits."""

from __future__ import annotations

import argparse
import tomllib

import pytest

from agentab.commands.tasks import settings_from
from agentab.errors import ScenarioError
from agentab.mining.decide import Decision
from agentab.mining.history import Commit
from agentab.mining.output import Mined, scenario_text

ENVIRONMENT = """\
[etalon]
setup = ["python3 -m venv .venv", ".venv/bin/pip install -e ."]
path = [".venv/bin"]
setup_timeout = "15m"

[protocol]
limits = { memory = "6G", processes = 256, disk = "4G", patch = "2M" }

[validation]
protect = ["tests/**", "pyproject.toml"]

[validators.tests]
mode = "tests"
runner = "pytest"
tests = ["tests/unit"]
"""


def arguments(scenario, **given) -> argparse.Namespace:
    defaults = {"runner": None, "suite": [], "setup": [], "path": [], "confinement": "bwrap"}
    return argparse.Namespace(scenario=scenario, **(defaults | given))


def test_a_file_of_the_environment_alone_is_whole_for_mining(tmp_path):
    path = tmp_path / "environment.toml"
    path.write_text(ENVIRONMENT)
    settings = settings_from(arguments(path))
    assert settings.etalon.setup == ("python3 -m venv .venv", ".venv/bin/pip install -e .")
    assert settings.etalon.path == (".venv/bin",) and settings.etalon.setup_timeout_s == 900
    assert settings.protect == ("tests/**", "pyproject.toml")
    assert (settings.runner, settings.suite) == ("pytest", ("tests/unit",))
    assert settings.limits.as_dict() == {
        "memory": "6G", "processes": 256, "disk": "4G", "patch": "2M",
    }  # fmt: skip


def test_what_the_file_holds_is_checked_as_a_scenarios_is(tmp_path):
    path = tmp_path / "environment.toml"
    path.write_text(
        ENVIRONMENT.replace('disk = "4G"', 'disk = "4"').replace("[validation]", "[validaton]")
    )
    with pytest.raises(ScenarioError) as raised:
        settings_from(arguments(path))
    said = str(raised.value)
    assert "unknown key `validaton`" in said
    assert "is missing" not in said  # nothing mining never reads is asked for
    path.write_text(ENVIRONMENT.replace('disk = "4G"', 'disk = "4"'))
    with pytest.raises(ScenarioError) as raised:
        settings_from(arguments(path))
    assert "protocol.limits.disk" in str(raised.value)
    assert "less than one megabyte" in str(raised.value)


def test_the_mined_scenario_keeps_the_limits_it_was_given(tmp_path):
    path = tmp_path / "environment.toml"
    path.write_text(ENVIRONMENT)
    commit = Commit("a" * 40, "b" * 40, "Fix x", "", (("M", "x.py"), ("M", "tests/test_x.py")))
    task = Mined("fix-x-aaaaaaa", commit, "mined/fix-x-aaaaaaa", Decision(None, "kept"), "Fix x\n")
    written = tomllib.loads(scenario_text("x", "repo", [task], settings_from(arguments(path))))
    assert written["protocol"]["limits"] == {
        "memory": "6G", "processes": 256, "disk": "4G", "patch": "2M",
    }  # fmt: skip
    assert written["etalon"]["setup_timeout"] == "900s"
    # Without a scenario's limits, the mined scenario declares its own.
    bare = tomllib.loads(scenario_text("x", "repo", [task], settings_from(arguments(None))))
    assert bare["protocol"]["limits"]["disk"] == "2G"
