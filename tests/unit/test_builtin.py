"""Built-in run metrics (docs/workflow.md): counted from the run's record and trajectory, usable in the
metric contract without a validator, and a warning when most tool calls failed."""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentab.scenario import load_scenario
from agentab.synthesis.environment import differing_environments, failed_calls_warnings
from agentab.synthesis.runs.builtin import builtin_metrics, protected_paths, tool_call_counts
from agentab.synthesis.runs.measures import build_measures
from agentab.synthesis.runs.tool_failures import failed_calls
from agentab.trajectory import read_transcript, run_trajectory
from agentab.validators import validator_output
from tests.unit.test_measures import RUN, SCENARIO


def transcript(tmp_path: Path, results: list[tuple[bool, str]], kind: str = "run") -> Path:
    lines = [{"type": "message", "role": "user", "text": "Fix it.", "tool_calls": []}]
    for index, (is_error, output) in enumerate(results):
        call = {"id": f"c{index}", "tool": "bash", "kind": kind, "input": {}, "command": "x"}
        lines.append({"type": "message", "role": "assistant", "text": "", "tool_calls": [call]})
        result = {"type": "tool_result", "id": f"c{index}", "tool": "bash"}
        lines.append(result | {"output": output, "is_error": is_error})
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def trajectory_of(transcript: Path, record: dict | None = None) -> dict | None:
    """The trajectory the measure step writes from a transcript (None when there is none)."""
    return (
        run_trajectory(read_transcript(transcript), record or {}) if transcript.is_file() else None
    )


def test_a_failed_call_is_one_the_harness_marked_or_that_exited_non_zero(tmp_path):
    path = transcript(
        tmp_path,
        [
            (True, "boom"),  # marked failed by the harness
            (False, "python: command not found\n\nCommand exited with code 127"),  # pi
            (False, "Process exited with code 1\nOutput:\nNo module named pytest"),  # Codex
            (False, "Exit Code: 2"),  # Gemini CLI
            (False, "Process exited with code 0\nOutput:\n3 passed"),
            (False, "error: no exit status said, and not marked: not counted"),
        ],
    )
    assert tool_call_counts(trajectory_of(path)) == (6, 4)
    assert tool_call_counts(trajectory_of(tmp_path / "absent.jsonl")) == (None, None)
    # A file that was read may say anything: only the harness's mark counts for it.
    read = transcript(tmp_path, [(False, "Command exited with code 1"), (True, "")], kind="read")
    assert tool_call_counts(trajectory_of(read)) == (2, 1)


def test_a_command_cannot_hide_its_failure_by_printing(tmp_path):
    # The trajectory keeps a long output's start and end: the exit status pi writes last stays.
    flood = "x" * 200_000 + "\n\nCommand exited with code 1"
    path = transcript(tmp_path, [(False, flood)])
    assert tool_call_counts(trajectory_of(path)) == (1, 1)
    assert failed_calls(trajectory_of(path)) == {"x": 1}


def test_the_builtins_come_from_the_record_and_the_transcript(tmp_path):
    run = {**RUN, "duration_s": 12.5, "facts": {**RUN["facts"], "turns": 3}}
    builtin = builtin_metrics(
        run, trajectory_of(transcript(tmp_path, [(False, "ok"), (True, "no")]))
    )
    assert builtin == {
        "turns": 3,
        "tool_calls": 2,
        "tool_errors": 1,
        "input_tokens": 10,
        "output_tokens": 2,
        "cost_usd": 0.01,
        "duration_s": 12.5,
        "protected_edits": 0,
        "bricks_used": {},  # the run's cell has no brick
        "brick_calls": {},
        "brick_usage": [],
    }
    edits = builtin_metrics(run, None, ["tests/test_a.py", "conftest.py"])
    assert edits["protected_edits"] == 2


def test_protected_paths_come_from_the_files_git_listed_else_the_patch(tmp_path):
    run = {"patch": {"files": ["calc.py", "tests/test_calc.py", "conftest.py"]}}
    protect = ("tests/**", "**/conftest.py")
    assert protected_paths(run, protect, None) == ["tests/test_calc.py", "conftest.py"]
    assert protected_paths(run, (), None) == []
    # An older run.json without the list: git reads the patch (a quoted name included).
    patch = tmp_path / "result.patch"
    patch.write_bytes(
        b'diff --git "a/test_\\303\\251.py" "b/test_\\303\\251.py"\nnew file mode 100644\n'
        b'--- /dev/null\n+++ "b/test_\\303\\251.py"\n@@ -0,0 +1 @@\n+import os\n'
    )
    assert protected_paths({}, ("test_*.py",), patch) == ["test_é.py"]


@pytest.fixture
def scenario(tmp_path: Path):
    path = tmp_path / "scenario.toml"
    text = textwrap.dedent(SCENARIO).replace(
        'metrics = ["tests_pass", "turns", "readable"]',
        'metrics = ["tests_pass", "turns", "readable", "tool_errors", "input_tokens"]',
    )
    path.write_text(text)
    return load_scenario(path, check_etalon=False, check_bricks=False)


def test_a_contract_metric_no_validator_returns_is_taken_from_the_builtins(scenario):
    outputs = {
        "tests": validator_output("tests", "script", {"tests_pass": True}),
        "stream": validator_output("stream", "script", {"turns": 4}),
    }
    builtin = {"turns": 9, "tool_errors": 2, "input_tokens": None}
    m = build_measures(scenario, scenario.cells[0], 1, RUN, outputs, builtin=builtin)
    assert m["builtin"] == builtin
    assert m["metrics"] == {"tests_pass": True, "turns": 4, "tool_errors": 2}  # a validator wins
    assert m["status"] == "invalid" and m["pending"] == ["readable"]
    assert m["problems"] == ["the run's files do not tell the built-in `input_tokens`"]


def test_a_failed_run_keeps_its_builtins(scenario):
    run = {**RUN, "outcome": {"status": "failed", "reason": "timeout"}}
    m = build_measures(scenario, scenario.cells[0], 1, run, {}, builtin={"tool_calls": 5})
    assert m["status"] == "failed" and m["builtin"] == {"tool_calls": 5}


def test_the_synthesis_warns_where_most_tool_calls_failed():
    def run(cell, calls, errors):
        return SimpleNamespace(cell=cell, builtin={"tool_calls": calls, "tool_errors": errors})

    cells = [SimpleNamespace(name="broken"), SimpleNamespace(name="fine")]
    result = SimpleNamespace(runs=[run("broken", 4, 3), run("broken", 2, 1), run("fine", 4, 1)])
    warnings = failed_calls_warnings(result, SimpleNamespace(cells=cells))
    assert len(warnings) == 1 and warnings[0].startswith("`broken`: 4 of its 6 tool calls failed")


def test_the_warning_fires_at_exactly_half_and_names_what_failed_most(tmp_path):
    # Without setup, every test command failed and every read worked: half of the calls.
    calls = [(False, "Command exited with code 127")] * 3 + [(False, "Exit code 0")]
    path = transcript(tmp_path, calls)
    lines = path.read_text().splitlines()
    commands = ["python3 -m pytest -q", "python3 -m pytest -q", "pytest", "ls"]
    for index, command in enumerate(commands):
        lines[1 + 2 * index] = lines[1 + 2 * index].replace(
            '"command": "x"', f'"command": "{command}"'
        )
    path.write_text("\n".join(lines) + "\n")
    assert failed_calls(trajectory_of(path)) == {"python3 -m pytest -q": 2, "pytest": 1}

    def run(failed, calls, errors):
        builtin = {"tool_calls": calls, "tool_errors": errors}
        return SimpleNamespace(cell="no setup", builtin=builtin, failed_calls=failed)

    runs = [run(failed_calls(trajectory_of(path)), 6, 3), run({"read `x`.py": 1}, 2, 1)]
    (warning,) = failed_calls_warnings(
        SimpleNamespace(runs=runs), SimpleNamespace(cells=[SimpleNamespace(name="no setup")])
    )
    assert warning.startswith(
        "`no setup`: 4 of its 8 tool calls failed (built-in `tool_errors`): half"
    )
    assert warning.endswith(
        "what failed most: `python3 -m pytest -q` (2), `pytest` (1), `read 'x'.py` (1)"
    )


def test_runs_that_got_different_environments_are_named(tmp_path):
    def run(name, lines):
        digest = None
        if lines is not None:
            body = "\n".join(lines)
            folder = tmp_path / "runs" / name
            folder.mkdir(parents=True)
            (folder / "environment.txt").write_text(body + "\n")
            digest = hashlib.sha256(body.encode()).hexdigest()
        cell = name.split("/")[0]
        return SimpleNamespace(run=name, cell=cell, provenance={"environment_sha256": digest})

    pinned = ["python 3.11.2 /workspace/.venv", "attrs==23.1.0", "pytest==8.3.4"]
    moved = ["python 3.11.2 /workspace/.venv", "iniconfig==2.0.0", "pytest==8.3.5"]
    same = [run(f"ref/r{n:02d}", pinned) for n in range(1, 5)]
    result = SimpleNamespace(
        results_dir=tmp_path, runs=[*same, run("rule/r02", moved), run("rule/r03", None)]
    )
    (warning,) = differing_environments(result)
    assert warning.startswith(
        "the runs got 2 different environments from the same setup: `rule` (`runs/rule/r02`) "
        "got another one than the 4 runs of the most common: no `attrs` (the others have "
        "`attrs==23.1.0`); `iniconfig==2.0.0`, which the others lack; `pytest==8.3.5` instead "
        "of `pytest==8.3.4`; compare their `environment.txt`"
    ), warning
    assert "r03" not in warning
    assert differing_environments(SimpleNamespace(runs=same, results_dir=tmp_path)) == []
    assert differing_environments(SimpleNamespace(runs=[run("x/r01", None)])) == []
    # An environment.txt changed since its run: the difference is not made up from it.
    (tmp_path / "runs" / "rule" / "r02" / "environment.txt").write_text("pytest==9\n")
    (warning,) = differing_environments(result)
    assert "an `environment.txt` that would tell how is missing or changed" in warning
    assert "9" not in warning.split("most common")[1]
