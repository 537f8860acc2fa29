"""What an attempt of a run leaves when it does not finish: no folder of its own."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from agentab import agent_run
from agentab.agent_run import RunFiles, perform_run
from agentab.layout import RunFolder
from agentab.scenario import load_scenario
from agentab.stopping import Stopped

DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo" / "scenario.toml"


def run_files(folder: Path) -> RunFiles:
    run = RunFolder(folder)
    names = RunFiles.__dataclass_fields__
    return RunFiles(
        **{name: getattr(run, "agent_lock" if name == "lock" else name) for name in names}
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
