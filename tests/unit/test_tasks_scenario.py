"""[tasks.<name>] and [protocol] aa at load: the run cells, their folders, and every refusal
naming its file, key and fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentab.cli import main
from agentab.layout import split_run_slug, task_run_slug
from agentab.scenario import load_scenario
from tests.unit.test_scenario import SEED_MATRIX, problems_of, scenario_dir, write

__all__ = ["scenario_dir"]  # the fixture, shared

TASKS = '[tasks.mean]\nprompt = "Fix mean."\n\n[tasks.median]\nprompt = "Add median."\n'
# The seed matrix without the delta that sets a prompt (with tasks, no delta may).
WITH_TASKS = (
    SEED_MATRIX.replace('[task]\nprompt = "Fix mean."\n', TASKS)
    .replace('context  = ["nothing", "rule", "careful ticket"]', 'context  = ["nothing", "rule"]')
    .replace('[deltas.context."careful ticket"]\nprompt = "Fix mean, then run the tests."\n', "")
)


def test_runs_are_cell_by_task_in_their_own_folders(scenario_dir: Path) -> None:
    scenario = load_scenario(write(scenario_dir, WITH_TASKS))
    assert [task.name for task in scenario.tasks] == ["mean", "median"]
    assert len(scenario.run_cells) == len(scenario.cells) * 2
    assert scenario.run_count == len(scenario.cells) * 2 * 10
    first = scenario.run_cells[0]
    assert (first.slug, first.task, first.prompt) == ("nothing-off--mean", "mean", "Fix mean.")
    assert scenario.run_cell("nothing-off--median").prompt == "Add median."
    assert split_run_slug(first.slug) == ("nothing-off", "mean")
    assert task_run_slug("rule-off", "") == "rule-off"


def test_one_task_keeps_cells_and_folders(scenario_dir: Path) -> None:
    scenario = load_scenario(write(scenario_dir, SEED_MATRIX))
    assert scenario.tasks == []
    assert [c.slug for c in scenario.run_cells] == [c.slug for c in scenario.cells]
    assert all(
        c.run_config() == r.run_config()
        for c, r in zip(scenario.cells, scenario.run_cells, strict=True)
    )


def test_task_and_tasks_together_are_refused(scenario_dir: Path) -> None:
    text = WITH_TASKS.replace(TASKS, TASKS + '\n[task]\nprompt = "Fix mean."\n')
    found = problems_of(scenario_dir, text)
    assert "scenario.toml" in found and "tasks" in found
    assert "both [task] and [tasks.<name>]" in found and "keep one" in found


def test_no_task_at_all_is_refused(scenario_dir: Path) -> None:
    found = problems_of(scenario_dir, WITH_TASKS.replace(TASKS, ""))
    assert "the scenario has no task" in found and "[tasks.<name>]" in found


def test_a_delta_may_not_set_the_prompt_with_tasks(scenario_dir: Path) -> None:
    text = WITH_TASKS.replace(
        '[deltas.thinking.high]\nthinking = "high"\n',
        '[deltas.thinking.high]\nthinking = "high"\nprompt = "Fix it."\n',
    )
    found = problems_of(scenario_dir, text)
    assert "deltas.thinking.high.prompt" in found
    assert "every cell runs every task" in found


def test_a_task_name_must_name_a_folder(scenario_dir: Path) -> None:
    found = problems_of(scenario_dir, WITH_TASKS.replace("[tasks.median]", '[tasks."Median Two"]'))
    assert "cannot name a folder" in found and "median-two" in found


def test_a_task_tag_must_exist(scenario_dir: Path) -> None:
    text = WITH_TASKS.replace('prompt = "Add median."', 'prompt = "Add median."\ntag = "v9"')
    found = problems_of(scenario_dir, text)
    assert "tasks.median.tag" in found


def test_aa_adds_a_copy_of_the_reference(scenario_dir: Path) -> None:
    text = SEED_MATRIX.replace("repetitions = 10", "repetitions = 10\naa = true")
    scenario = load_scenario(write(scenario_dir, text))
    copy = scenario.cells[-1]
    reference = scenario.cell(scenario.reference)
    assert (copy.name, copy.slug, copy.is_aa) == ("nothing · off (A/A)", "nothing-off-a-a", True)
    assert copy.run_config() == reference.run_config()  # identical in treatment
    assert copy.slug != reference.slug  # so its own folders and seeds


def test_check_shows_tasks_and_run_count(scenario_dir: Path, capsys) -> None:
    path = write(scenario_dir, WITH_TASKS.replace("repetitions = 10", "repetitions = 3"))
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "tasks (2): every cell runs each; runs/<cell>--<task>/rNN" in out
    assert "1. mean    @ v1.0  Fix mean." in out
    assert "runs        5 cells × 2 tasks × 3 repetitions = 30" in out


@pytest.mark.parametrize("repetitions,warned", [(4, True), (5, False)])
def test_the_minimum_of_runs_is_per_cell_over_tasks(scenario_dir, capsys, repetitions, warned):
    text = WITH_TASKS.replace("repetitions = 10", f"repetitions = {repetitions}")
    assert main(["check", str(write(scenario_dir, text))]) == 0
    assert ("tasks gives each cell" in capsys.readouterr().out) is warned
