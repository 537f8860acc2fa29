"""Looks under the fixed rule: each synthesis at a new number of runs is recorded, and a
synthesis after several warns, naming the sequential mode."""

from __future__ import annotations

import json

from agentab.synthesis.synthesize import synthesize
from tests.unit.test_synthesis import write_clear_effect, write_run, write_scenario


def test_one_look_is_recorded_and_warns_of_nothing(tmp_path) -> None:
    folder = write_clear_effect(tmp_path / "fixed")
    synthesize(folder)
    synthesize(folder)  # the same runs again: the same look
    looks = json.loads((folder / "looks.json").read_text())["looks"]
    assert looks == [{"look": 1, "runs_per_cell": {"nothing": 10, "rule": 10}}]
    assert "look 2" not in (folder / "synthesis.md").read_text()


def test_raising_repetitions_after_a_synthesis_is_a_second_look_and_it_warns(tmp_path) -> None:
    folder = write_clear_effect(tmp_path / "fixed")
    synthesize(folder)
    write_scenario(folder, repetitions=20)
    for rep in range(11, 21):
        write_run(folder, "nothing", rep, {"ran_tests": False, "turns": 5})
        write_run(folder, "rule", rep, {"ran_tests": True, "turns": 6})
    result = synthesize(folder)
    assert len(result.looks) == 2
    text = (folder / "synthesis.md").read_text()
    assert "look 2 at this results folder" in text and "written at 10 runs per cell" in text
    assert 'stopping = "sequential"' in text


def test_a_sequential_scenario_warns_of_a_changed_design_not_of_its_waves(tmp_path) -> None:
    from tests.unit.test_sequential_synthesis import write_sequential

    folder = write_sequential(tmp_path / "seq")
    for rep in range(1, 6):
        write_run(folder, "nothing", rep, {"ran_tests": rep % 2 == 0, "turns": 5})
        write_run(folder, "rule", rep, {"ran_tests": rep % 2 == 1, "turns": 5})
    synthesize(folder)
    for rep in range(6, 11):  # a second wave: the rule is made for such looks
        write_run(folder, "nothing", rep, {"ran_tests": rep % 2 == 0, "turns": 5})
        write_run(folder, "rule", rep, {"ran_tests": rep % 2 == 1, "turns": 5})
    synthesize(folder)
    assert "design changed" not in (folder / "synthesis.md").read_text()
    assert "look 2" not in (folder / "synthesis.md").read_text()
    path = folder / "scenario.toml"
    path.write_text(path.read_text().replace("repetitions = 30", "repetitions = 50", 1))
    synthesize(folder)
    text = (folder / "synthesis.md").read_text()
    assert "the sequential design changed" in text
    assert "waves of 5 up to 30, then waves of 5 up to 50" in text
