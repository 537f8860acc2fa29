"""A sequential scenario's synthesis: the waves replayed from measures.json alone, each gap
decided by its confidence sequence, and the stopping table (docs/synthesis.md)."""

from __future__ import annotations

from pathlib import Path

from agentab.synthesis.synthesize import synthesize
from tests.unit.test_synthesis import write_run, write_scenario

SEQUENTIAL = 'repetitions = 30\nstopping = "sequential"\nwave = 5\ndecide = ["ran_tests"]\n'


def write_sequential(folder: Path) -> Path:
    write_scenario(folder, repetitions=30)
    path = folder / "scenario.toml"
    path.write_text(path.read_text().replace("repetitions = 30\n", SEQUENTIAL, 1))
    return folder


def test_a_clear_effect_is_decided_at_its_second_wave_and_the_rest_not_run(tmp_path) -> None:
    folder = write_sequential(tmp_path / "seq")
    for rep in range(1, 11):  # two waves of each: what the workflow would have run
        write_run(folder, "nothing", rep, {"ran_tests": rep == 3, "turns": 5 + rep % 3})
        write_run(folder, "rule", rep, {"ran_tests": True, "turns": 5 + rep % 2})
    result = synthesize(folder)
    (gap,) = [gap for gap in result.family if gap.metric == "ran_tests"]
    assert gap.verdict.is_established and gap.sequence.decided_at == 2
    assert gap.verdict.ci_low > 0
    assert result.waves.given == {"nothing": 2, "rule": 2}
    assert result.missing == []  # the waves it never got are not missing
    text = result.outputs["synthesis.md"].read_text()
    assert "## Stopping: sequential" in text
    assert "`ran_tests` at wave 2" in text
    assert "40 runs not made" in text


def test_no_effect_runs_to_its_maximum_and_stays_inconclusive(tmp_path) -> None:
    folder = write_sequential(tmp_path / "seq")
    for rep in range(1, 31):
        write_run(folder, "nothing", rep, {"ran_tests": rep % 2 == 0, "turns": 5 + rep % 3})
        write_run(folder, "rule", rep, {"ran_tests": rep % 4 < 2, "turns": 5 + rep % 4})
    result = synthesize(folder)
    assert result.waves.given == {"nothing": 6, "rule": 6}
    assert not any(gap.verdict.is_established for gap in result.family)
    assert "6 of 6" in result.outputs["synthesis.md"].read_text()


def test_a_wave_the_replay_gives_but_the_folder_lacks_is_missing(tmp_path) -> None:
    folder = write_sequential(tmp_path / "seq")
    for rep in range(1, 11):  # undecided after wave 2: wave 3 is due
        write_run(folder, "nothing", rep, {"ran_tests": rep % 2 == 0, "turns": 5})
        write_run(folder, "rule", rep, {"ran_tests": rep % 2 == 1, "turns": 5})
    result = synthesize(folder)
    assert sorted({m.rep for m in result.missing}) == list(range(11, 31))
    assert result.waves.looked == 6


def test_the_wave_decision_names_the_cells_of_the_next_wave(tmp_path) -> None:
    from agentab.steps.decide_wave import decide

    folder = write_sequential(tmp_path / "seq")
    for rep in range(1, 11):
        write_run(folder, "nothing", rep, {"ran_tests": rep == 3, "turns": 5})
        write_run(folder, "rule", rep, {"ran_tests": True, "turns": 5})
    first, second = decide(folder, 1), decide(folder, 2)
    assert first["next"] == ["nothing", "rule"] and first["decided"] == {}
    assert second["next"] == [] and second["decided"] == {"rule · ran_tests": 2}


def test_a_wave_the_budget_cut_short_gets_no_wave_after_it(tmp_path) -> None:
    import json

    folder = write_sequential(tmp_path / "seq")
    for rep in range(1, 6):
        write_run(folder, "nothing", rep, {"ran_tests": rep % 2 == 0, "turns": 5})
        write_run(folder, "rule", rep, {"ran_tests": rep % 2 == 1, "turns": 5})
    measures = folder / "runs" / "rule" / "r05" / "measures.json"
    data = json.loads(measures.read_text())
    measures.write_text(json.dumps({**data, "status": "not-started"}))
    result = synthesize(folder)
    assert result.waves.halted == {1} and result.waves.given == {"nothing": 1, "rule": 1}


def test_plan_gives_a_sequential_scenarios_expected_runs_to_a_decision(tmp_path, capsys) -> None:
    from agentab.cli import main

    folder = write_sequential(tmp_path / "seq")
    for rep in range(1, 11):
        write_run(folder, "nothing", rep, {"ran_tests": rep <= 3, "turns": 5 + rep % 3})
        write_run(folder, "rule", rep, {"ran_tests": True, "turns": 5 + rep % 2})
    assert main(["plan", str(folder), "--gap", "ran_tests=0.6"]) == 0
    out = capsys.readouterr().out
    assert "under sequential stopping: waves of 5, at most 30 (6 waves)" in out
    line = next(line for line in out.splitlines() if line.startswith("ran_tests"))
    decided, mean = line.split()[-5], float(line.split()[-4])
    assert decided.endswith("%") and int(decided[:-1]) > 90 and 5 <= mean < 20, line
    assert main(["plan", str(folder), "--gap", "ran_tests=0.9"]) == 0
    assert "cannot move by +0.9" in capsys.readouterr().out


def test_the_report_draws_each_gaps_sequence_and_lists_only_the_runs_given(tmp_path) -> None:
    from agentab.report import build_report

    folder = write_sequential(tmp_path / "seq")
    for rep in range(1, 11):
        write_run(folder, "nothing", rep, {"ran_tests": rep == 3, "turns": 5 + rep % 3})
        write_run(folder, "rule", rep, {"ran_tests": True, "turns": 5 + rep % 2})
    result = build_report(folder)
    assert result.runs == 20
    page = (folder / "report" / "cells" / "rule.html").read_text()
    assert page.count('<figure class="sequence">') == 2
    assert "established at wave 2" in page and "wave 2: 10 pairs" in page


def test_with_two_tasks_each_wave_pairs_runs_within_their_task(tmp_path) -> None:
    """A rule that always makes the agent run the tests, on an easy task (the reference runs
    them half the time) and a hard one (never): decided at wave 1 or 2, pairs from both tasks;
    the turns (no effect) stay undecided."""
    from tests.unit import test_tasks_synthesis as tasks

    folder = tasks.write_folder(tmp_path / "strata", repetitions=30)
    path = folder / "scenario.toml"
    text = path.read_text().replace(
        "repetitions = 30\n", 'repetitions = 30\nstopping = "sequential"\nwave = 5\n', 1
    )
    path.write_text(text.replace('metrics = ["ran_tests", "turns"]', 'metrics = ["ran_tests"]'))
    for task in ("easy", "hard"):
        for rep in range(1, 11):
            tasks.write_run(
                folder, "nothing", task, rep, {"ran_tests": task == "easy" and rep % 2 == 1}
            )
            tasks.write_run(folder, "rule", task, rep, {"ran_tests": True})
    result = synthesize(folder)
    (gap,) = result.family
    assert gap.verdict.is_established and gap.sequence.decided_at in (1, 2)
    assert gap.sequence.looks[0].pairs == 10  # a wave: 5 pairs in each of the two tasks
    assert result.waves.given == {
        "nothing": gap.sequence.decided_at,
        "rule": gap.sequence.decided_at,
    }
    assert result.missing == []


def test_a_decide_metric_without_values_holds_its_cell_to_the_maximum(tmp_path) -> None:
    """`decide` names a metric no run has a value of (a form nobody filled): it cannot be
    decided, so the cell runs every wave, as docs/scenario.md says."""
    folder = write_sequential(tmp_path / "seq")
    path = folder / "scenario.toml"
    path.write_text(path.read_text().replace('decide = ["ran_tests"]', 'decide = ["turns"]'))
    for rep in range(1, 11):
        write_run(folder, "nothing", rep, {"ran_tests": rep == 3}, pending=["turns"])
        write_run(folder, "rule", rep, {"ran_tests": True}, pending=["turns"])
    result = synthesize(folder)
    assert result.waves.given == {"nothing": 6, "rule": 6}


def test_a_single_cell_runs_every_wave(tmp_path) -> None:
    folder = tmp_path / "one"
    write_scenario(folder, repetitions=30, cells=("nothing",))
    path = folder / "scenario.toml"
    path.write_text(path.read_text().replace("repetitions = 30\n", SEQUENTIAL, 1))
    for rep in range(1, 6):
        write_run(folder, "nothing", rep, {"ran_tests": rep == 3, "turns": 5})
    result = synthesize(folder)
    assert result.waves.given == {"nothing": 6}
    assert len(result.missing) == 25  # the waves due, not yet run
