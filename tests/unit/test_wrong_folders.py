"""A folder where a file or a results folder belongs: the fix names what to pass instead."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentab.cli import main
from agentab.errors import AgentabError
from agentab.scenario import load_scenario
from agentab.synthesis.synthesize import synthesize

DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo"


def test_a_scenario_folder_given_as_the_scenario_names_its_file(tmp_path) -> None:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder)
    with pytest.raises(AgentabError) as refused:
        load_scenario(folder, check_etalon=False)
    said = refused.value.render()
    assert "is a folder; a scenario is one TOML file" in said
    assert f"name the file: {folder / 'scenario.toml'}" in said
    assert "permissions" not in said


def test_a_folder_with_no_results_is_not_asked_for_a_frozen_scenario(tmp_path) -> None:
    with pytest.raises(AgentabError) as refused:
        synthesize(tmp_path)
    said = refused.value.render()
    assert "holds no results" in said and "results/<scenario name>" in said
    assert "copy the scenario" not in said


def test_synthesize_refuses_a_scenario_folder_and_writes_nothing_in_it(tmp_path, capsys):
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder)
    before = sorted(path.name for path in folder.iterdir())
    assert main(["synthesize", str(folder)]) == 2
    said = capsys.readouterr().err
    assert "a scenario's folder, not a results folder" in said
    assert "results/demo" in said and "Traceback" not in said
    assert sorted(path.name for path in folder.iterdir()) == before
