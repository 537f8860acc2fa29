"""What an attempt of a run leaves when it does not finish: its request log kept apart, and no
folder of its own.

Snakemake deletes a job's outputs before it redoes the job, so the log of an attempt that was
killed, stopped or ended in a fault survives only if it was never at `model-requests.jsonl`.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from agentab.layout import RunFolder
from agentab.run import agent_run
from agentab.run.agent_run import (
    RunFiles,
    adopt_attempt_log,
    new_attempt_log,
    perform_run,
    set_aside_earlier_attempt,
)
from agentab.scenario import load_scenario
from agentab.workflow.stopping import Stopped

DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo" / "scenario.toml"


def run_files(folder: Path) -> RunFiles:
    run = RunFolder(folder)
    names = RunFiles.__dataclass_fields__
    return RunFiles(
        **{name: getattr(run, "agent_lock" if name == "lock" else name) for name in names}
    )


def test_a_killed_attempts_log_stays_apart_and_the_next_attempts_log_becomes_the_runs(tmp_path):
    files = run_files(tmp_path / "r01")
    killed = new_attempt_log(files)
    killed.write_text('{"seq": 1}\n')  # and then kill -9: nothing moves it
    redo = new_attempt_log(files)
    redo.write_text('{"seq": 1}\n{"seq": 2}\n')
    adopt_attempt_log(redo, files)
    assert files.model_requests.read_text() == '{"seq": 1}\n{"seq": 2}\n'
    assert [path.name for path in files.earlier_attempts.iterdir()] == [
        "attempt-1-model-requests.jsonl"
    ]
    assert killed.read_text() == '{"seq": 1}\n'


def test_a_run_done_in_one_attempt_has_no_earlier_attempts(tmp_path):
    files = run_files(tmp_path / "r01")
    adopt_attempt_log(new_attempt_log(files), files)
    assert files.model_requests.exists()
    assert not files.earlier_attempts.exists()


def test_a_log_left_at_the_runs_path_is_set_aside_under_the_next_number(tmp_path):
    files = run_files(tmp_path / "r01")
    new_attempt_log(files)
    files.model_requests.write_text('{"seq": 1}\n')  # a step run by hand, then run again
    set_aside_earlier_attempt(files)
    assert not files.model_requests.exists()
    assert (files.earlier_attempts / "attempt-2-model-requests.jsonl").read_text() == (
        '{"seq": 1}\n'
    )


class InstalledHarness:
    name = "pi"

    def installation(self, version, harnesses_dir):
        return None


def test_a_run_stopped_while_cloning_leaves_no_folder_in_the_work_folder(tmp_path, monkeypatch):
    def stopped_while_cloning(etalon, clone, mirrors_dir):
        (clone / ".git").mkdir(parents=True)  # half a clone
        raise Stopped(signal.SIGTERM)

    monkeypatch.setattr(agent_run, "get_harness", lambda name: InstalledHarness())
    monkeypatch.setattr(agent_run, "ensure_fresh_clone", stopped_while_cloning)
    scenario = load_scenario(DEMO, check_etalon=False)
    work = tmp_path / "work"
    with pytest.raises(Stopped):
        perform_run(
            scenario,
            scenario.cells[0],
            1,
            files=run_files(tmp_path / "r01"),
            work_root=work,
            harnesses_dir=tmp_path / "harnesses",
            mirrors_dir=tmp_path / "mirrors",
        )
    assert work.is_dir() and not list(work.iterdir())
