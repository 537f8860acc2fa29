"""The workflow's last line: runs measured by status, and why runs are invalid."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from agentab.workflow.targets import Workflow, measured_summary

DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo"


def demo_workflow(tmp_path: Path) -> Workflow:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder, symlinks=True)
    config = {
        "scenarios": [str(folder / "scenario.toml")],
        "results": str(tmp_path / "results"),
        "state": str(tmp_path / ".agentab"),
    }
    return Workflow.from_config(config)


def write(path: str, status: str, problems: list[str] = ()) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"status": status, "problems": list(problems)}))


def test_the_last_line_says_how_many_runs_are_invalid_and_why(tmp_path: Path) -> None:
    flow = demo_workflow(tmp_path)
    measures = flow.all_measures("demo")
    bad = "validator `tests` (validators/tests.sh): its output is not JSON: 'ok'"
    write(measures[0], "valid")
    write(measures[1], "invalid", [bad])
    write(measures[2], "invalid", [bad])
    write(measures[3], "invalid", ["protected file edited: tests/test_slug.py"])
    line = measured_summary(flow)
    assert line.startswith(f"agentab: demo: 4/{len(measures)} runs measured (3 invalid, 1 valid)")
    assert line.endswith(f"; invalid: {bad} (2 runs, and 1 other reason)")


def test_no_invalid_run_no_reason(tmp_path: Path) -> None:
    flow = demo_workflow(tmp_path)
    write(flow.all_measures("demo")[0], "valid")
    assert "invalid" not in measured_summary(flow)
