"""Policies, rubrics, schemas and a script validator's own files frozen with the results
(`run/frozen_inputs.py`): copied once by their hash, used from that copy, and in the params of
exactly the jobs that use them."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from agentab.harnesses.base import HarnessFault, RunSpec
from agentab.run.frozen_inputs import (
    agent_inputs,
    frozen_copy,
    inputs_view,
    scenario_inputs,
    validator_files_param,
    validator_inputs,
)
from agentab.run.model_choice import told_model
from agentab.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def scenario(tmp_path: Path):
    folder = tmp_path / "demo"
    shutil.copytree(REPO / "scenarios" / "demo", folder)
    shutil.copy(REPO / "src/agentab/offline_model/policies/demo.toml", folder / "fix.toml")
    (folder / "validators" / "hidden.txt").write_text("a hidden test\n")
    (folder / "validators" / "__pycache__").mkdir()
    (folder / "validators" / "__pycache__" / "tests.cpython-311.pyc").write_bytes(b"\0")
    # The demo's tests as a script validator beside two others in one folder, as a user's are.
    (folder / "validators" / "tests.py").write_text("#!/usr/bin/env python3\nprint('{}')\n")
    (folder / "validators" / "tests.py").chmod(0o755)
    text = (folder / "scenario.toml").read_text()
    text = re.sub(
        r"(?ms)^\[validators\.tests\]\n.*?\n\n",
        '[validators.tests]\nmode = "script"\nrun = ["validators/tests.py"]\n\n',
        text.replace('model = "demo" ', 'model = "fix.toml" ', 1),
    )
    (folder / "scenario.toml").write_text(text)
    return load_scenario(folder / "scenario.toml", check_etalon=False)


def test_a_tests_validator_reruns_for_its_hidden_tests_and_each_tasks():
    scenario = load_scenario(REPO / "scenarios/more-itertools/scenario.toml", check_etalon=False)
    (hidden,) = validator_inputs(scenario, scenario.validators["fixed"])
    assert (hidden.kind, hidden.rel) == ("hidden", "validators/hidden")
    params = validator_files_param(scenario, scenario.validators["fixed"])
    assert list(params) == ["validators/hidden"]
    assert validator_inputs(scenario, scenario.validators["tests"]) == ()


def test_a_policy_file_is_served_from_its_frozen_copy_checked_against_its_hash(
    scenario, tmp_path: Path
) -> None:
    cell = scenario.run_cells[0]
    (policy,) = agent_inputs(scenario, cell)
    assert (policy.kind, policy.rel, policy.shipped) == ("policy", "fix.toml", False)
    store = tmp_path / "results" / "inputs"
    spec = RunSpec(tmp_path, tmp_path, "x", "offline", "fix.toml", "off", 60.0)
    told, _, served = told_model(cell, spec, (policy,), store)
    assert served == str(store / policy.sha256[:16] / "fix.toml") and told.model == "fix"
    assert Path(served).read_bytes() == (scenario.dir / "fix.toml").read_bytes()
    # Edited in the scenario's folder after the scenario was loaded: never served as it.
    (scenario.dir / "fix.toml").write_text("[policy]\n")
    assert frozen_copy(policy, store) == Path(served)  # frozen: the copy holds
    shutil.rmtree(store)
    with pytest.raises(HarnessFault, match="fix.toml changed since the scenario was loaded"):
        frozen_copy(policy, store)


def test_a_shipped_policy_is_named_by_its_hash_and_served_by_name(scenario, tmp_path) -> None:
    judge = validator_inputs(scenario, scenario.validators["on_task"])
    assert [(i.kind, i.rel, i.shipped) for i in judge] == [
        ("rubric", "rubrics/on_task.md", False),
        ("schema", "rubrics/on_task.schema.json", False),
        ("policy", "demo", True),
    ]
    assert len(judge[2].sha256) == 64 and frozen_copy(judge[2], tmp_path) == judge[2].path
    assert "demo" not in {item.rel for item in scenario_inputs(scenario)}  # not frozen


def test_a_validator_reruns_for_its_folder_less_the_other_validators_scripts(scenario) -> None:
    params = validator_files_param(scenario, scenario.validators["tests"])
    assert sorted(params) == ["validators/hidden.txt", "validators/tests.py"]  # no cache
    judge = validator_files_param(scenario, scenario.validators["on_task"])
    assert sorted(judge) == ["rubrics/on_task.md", "rubrics/on_task.schema.json"]


def test_a_validator_reads_its_files_from_a_view_of_the_frozen_copies(scenario, tmp_path):
    store, view = tmp_path / "inputs", tmp_path / "job" / "frozen"
    (folder,) = validator_inputs(scenario, scenario.validators["tests"])
    assert (folder.kind, folder.rel) == ("validator", "validators")
    made = inputs_view([folder], store, view)
    assert sorted(p.name for p in (made / "validators").iterdir()) == [
        "behaviour.py",
        "hidden.txt",
        "scope.py",
        "tests.py",
    ]
    assert (made / "validators" / "tests.py").stat().st_mode & 0o111  # still a program
    assert [p.name for p in made.iterdir()] == ["validators"]  # nothing else of the scenario


def test_a_folder_of_another_validators_own_within_its_folder_is_not_its_input(scenario):
    slow = scenario.dir / "validators" / "slow"
    slow.mkdir()
    (slow / "slow.py").write_text("print('{}')\n")
    (slow / "slow.wake").write_text("")
    text = (scenario.dir / "scenario.toml").read_text()
    (scenario.dir / "scenario.toml").write_text(
        text + '\n[validators.slow]\nmode = "script"\nrun = ["validators/slow/slow.py"]\n'
    )
    (slow / "slow.py").chmod(0o755)
    loaded = load_scenario(scenario.dir / "scenario.toml", check_etalon=False)
    tests = validator_files_param(loaded, loaded.validators["tests"])
    assert sorted(tests) == ["validators/hidden.txt", "validators/tests.py"]
    own = validator_files_param(loaded, loaded.validators["slow"])
    assert sorted(own) == ["validators/slow/slow.py", "validators/slow/slow.wake"]


def test_inputs_are_hashed_once_per_loaded_scenario_and_a_later_edit_is_refused(
    scenario, tmp_path: Path
) -> None:
    # The hashes of the moment the step loaded its scenario.
    (rubric, _, _) = validator_inputs(scenario, scenario.validators["on_task"])
    (scenario.dir / "rubrics" / "on_task.md").write_text("edited while the workflow runs\n")
    assert validator_inputs(scenario, scenario.validators["on_task"])[0] == rubric
    with pytest.raises(HarnessFault, match="rubrics/on_task.md changed since"):
        inputs_view([rubric], tmp_path / "inputs", tmp_path / "view")
