"""The behaviour measures every run has (`agentab.trajectory.behaviour`): each harness's tool
vocabulary put in the same classes, shell commands read as the commands they run, and the
measures in measures.json's built-in metrics (only for a run with a transcript).
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from agentab.errors import ScenarioError
from agentab.scenario import load_scenario
from agentab.trajectory import CLASSES, behaviour_measures, run_trajectory
from agentab.trajectory import tests_pattern as pattern_of  # not collected as a test
from agentab.trajectory.behaviour import call_class
from tests.unit.test_trajectory import DEMO_SCENARIO, DEMO_STREAMS, demo_run, measured

BOTH = pattern_of([])


def said(*calls, usage=None) -> dict:
    """An assistant message making `calls`: (tool, kind, input) each."""
    made = []
    for number, (tool, kind, given) in enumerate(calls):
        call = {"id": f"c{number}", "tool": tool, "kind": kind, "input": given}
        if kind == "run":
            call["command"] = given.get("command")
        made.append(call)
    return {"type": "message", "role": "assistant", "text": "", "tool_calls": made}


def classes(*calls, pattern: str = BOTH) -> list[str]:
    runs_tests = re.compile(pattern)
    return [call_class(call, runs_tests)[0] for call in said(*calls)["tool_calls"]]


@pytest.mark.parametrize("harness", sorted(DEMO_STREAMS))
def test_every_harness_demo_run_reads_edits_then_runs_the_tests(harness):
    lines, record = demo_run(harness)
    measures = behaviour_measures(run_trajectory(lines, {}), record, pattern_of(["unittest"]))
    assert {f"calls_{kind}": measures[f"calls_{kind}"] for kind in CLASSES} == {
        "calls_read": 1, "calls_edit": 1, "calls_search": 0, "calls_tests": 1,
        "calls_shell": 0, "calls_other": 0,
    }  # fmt: skip
    assert measures["tests_ran"] is True
    assert (measures["files_read"], measures["files_edited"]) == (1, 1)  # calc.py, each
    assert measures["repeated_calls"] == 0
    assert measures["turns_before_edit"] == 1  # it read calc.py first
    facts = record["facts"]
    spent = sum(facts["tokens"].values())
    assert measures["tokens_per_turn"] == round(spent / facts["turns"], 1)


# Each harness's own tool names, as its transcript writes them (harnesses/*: TOOL_KINDS).
VOCABULARY = {
    "pi": [
        ("read", "read", {"path": "calc.py"}, "read"),
        ("edit", "edit", {"path": "calc.py", "edits": []}, "edit"),
        ("write", "write", {"path": "new.py", "content": ""}, "edit"),
        ("bash", "run", {"command": "python3 -m unittest"}, "tests"),
        ("bash", "run", {"command": "git status"}, "shell"),
        ("grep", "other", {"pattern": "mean"}, "search"),
        ("find", "other", {"pattern": "*.py"}, "search"),
        ("ls", "other", {}, "search"),
        ("zq_lookup", "other", {"key": "a"}, "other"),  # an extension's tool
    ],
    "claude-code": [
        ("Read", "read", {"file_path": "/w/calc.py"}, "read"),
        ("Edit", "edit", {"file_path": "/w/calc.py"}, "edit"),
        ("MultiEdit", "other", {"file_path": "/w/calc.py", "edits": []}, "edit"),
        ("Write", "write", {"file_path": "/w/new.py"}, "edit"),
        ("Bash", "run", {"command": "pytest -q tests/"}, "tests"),
        ("Grep", "other", {"pattern": "mean"}, "search"),
        ("Glob", "other", {"pattern": "**/*.py"}, "search"),
        ("LS", "other", {"path": "/w"}, "search"),
        ("Task", "other", {"prompt": "review"}, "other"),
        ("Skill", "other", {"skill": "zq"}, "other"),
    ],
    "codex": [
        ("command_execution", "run", {"command": "sed -n 1,200p calc.py"}, "read"),
        ("command_execution", "run", {"command": "rg -n mean"}, "search"),
        ("command_execution", "run", {"command": "python -m pytest -q"}, "tests"),
        ("command_execution", "run", {"command": "git diff"}, "shell"),
        ("file_change", "edit", {"changes": [{"path": "calc.py", "kind": "update"}]}, "edit"),
        ("file_change", "write", {"changes": [{"path": "new.py", "kind": "add"}]}, "edit"),
        ("mcp:docs/search", "other", {"arguments": {}}, "other"),
        ("web_search", "other", {"query": "mean"}, "search"),
    ],
    "gemini": [
        ("read_file", "read", {"file_path": "calc.py"}, "read"),
        ("read_many_files", "other", {"paths": ["a.py", "b.py"]}, "read"),
        ("replace", "edit", {"file_path": "calc.py"}, "edit"),
        ("write_file", "write", {"file_path": "new.py", "content": ""}, "edit"),
        ("run_shell_command", "run", {"command": "python3 -m unittest -v"}, "tests"),
        ("search_file_content", "other", {"pattern": "mean"}, "search"),
        ("grep_search", "other", {"pattern": "mean"}, "search"),
        ("glob", "other", {"pattern": "*.py"}, "search"),
        ("list_directory", "other", {"path": "."}, "search"),
        ("save_memory", "other", {"fact": "x"}, "other"),
    ],
}


@pytest.mark.parametrize("harness", sorted(VOCABULARY))
def test_each_harness_tool_vocabulary_lands_in_the_same_classes(harness):
    calls = [(tool, kind, given) for tool, kind, given, _ in VOCABULARY[harness]]
    assert classes(*calls) == [expected for *_, expected in VOCABULARY[harness]]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python -m pytest -q", "tests"),
        ("python3 -m unittest discover -s tests", "tests"),
        ("cd app && python3 -m pytest tests/test_calc.py 2>&1 | tail -20", "tests"),
        ("timeout 60 uv run pytest", "tests"),
        ("PYTHONPATH=src py.test", "tests"),
        ("env A=1 python3.12 -X dev -m unittest", "tests"),
        ("ls\npytest -x", "tests"),  # a command of two lines
        ("pip install pytest", "shell"),  # names the runner, runs the installer
        ("echo 'run pytest later'", "shell"),
        ("python test_calc.py", "shell"),
        ("grep -rn mean .", "search"),
        ("git grep -n 'def mean'", "search"),
        ("find . -name '*.py' | xargs wc -l", "search"),
        ("cat calc.py", "read"),
        ("head -n 20 calc.py && tail calc.py", "read"),
        ("cat > calc.py <<'EOF'", "shell"),  # writes
        ("grep 'unclosed", "search"),  # a quote left open: read by whitespace
        ("", "shell"),
    ],
)
def test_a_shell_command_is_read_as_what_it_runs(command, expected):
    assert classes(("bash", "run", {"command": command})) == [expected]


def test_the_test_command_follows_the_tests_validators_runner():
    unittest, pytest_only = pattern_of(["unittest"]), pattern_of(["pytest"])
    run_unittest = ("bash", "run", {"command": "python -m unittest"})
    run_pytest = ("bash", "run", {"command": "python -m pytest"})
    assert classes(run_unittest, run_pytest, pattern=unittest) == ["tests", "tests"]
    # With pytest as the runner, `python -m unittest` is not how the tests run
    assert classes(run_unittest, run_pytest, pattern=pytest_only) == ["shell", "tests"]
    assert classes(run_unittest, run_pytest, pattern=BOTH) == ["tests", "tests"]
    assert pattern_of(["a runner agentab does not know"]) == BOTH


def test_files_repeats_and_the_turns_before_the_first_edit():
    lines = [
        {"type": "message", "role": "user", "text": "Fix mean().", "tool_calls": []},
        said(("bash", "run", {"command": "ls"})),
        said(
            ("read", "read", {"path": "calc.py"}),
            ("Read", "read", {"file_path": "/workspace/calc.py"}),
        ),
        said(("bash", "run", {"command": "cat util.py other/x.py"})),
        said(("edit", "edit", {"path": "calc.py"}), ("write", "write", {"path": "b.py"})),
        said(("bash", "run", {"command": "ls"})),  # the first call again
        {"type": "tool_result", "id": "c0", "tool": "bash", "output": "", "is_error": False},
    ]
    record = {"facts": {"turns": 5, "tokens": {"input": 90, "output": 10}}}
    measures = behaviour_measures(run_trajectory(lines, {}), record, BOTH)
    assert measures["files_read"] == 3  # calc.py (twice, named two ways), util.py, other/x.py
    assert measures["files_edited"] == 2
    assert measures["repeated_calls"] == 1
    assert measures["turns_before_edit"] == 3
    assert measures["tokens_per_turn"] == 20.0
    assert measures["tests_ran"] is False and measures["calls_search"] == 2


def test_a_run_that_never_edits_counts_every_turn_and_unknown_tokens_stay_unknown():
    lines = [said(("read", "read", {"path": "a.py"})), said()]
    measures = behaviour_measures(
        run_trajectory(lines, {}), {"facts": {"turns": 0, "tokens": {}}}, BOTH
    )
    assert measures["turns_before_edit"] == 2
    assert measures["tokens_per_turn"] is None
    hostile = [said(("bash", "run", {"command": 7})), {"type": "message", "role": "assistant"}]
    assert (
        behaviour_measures(run_trajectory(hostile, {}), {"facts": "nope"}, BOTH)["calls_shell"] == 1
    )


def test_the_measures_are_built_in_metrics_of_a_run_with_a_transcript(tmp_path):
    builtin = json.loads(measured(tmp_path / "a", "codex").measures.read_text())["builtin"]
    assert builtin["calls_tests"] == 1 and builtin["tests_ran"] is True  # the demo: unittest
    assert builtin["calls_read"] == 1  # Codex read calc.py with `cat`
    without = json.loads(measured(tmp_path / "b", "codex", False).measures.read_text())["builtin"]
    assert not {f"calls_{kind}" for kind in CLASSES} & set(without)
    assert "tests_ran" not in without and "tool_calls" in without  # the others as they were


def demo_with(tmp_path, line: str):
    """A copy of the demo scenario with one more line in its [validation] table."""
    folder = tmp_path / "demo"
    shutil.copytree(DEMO_SCENARIO.parent, folder)
    path = folder / "scenario.toml"
    path.write_text(path.read_text().replace("[validation]\n", f"[validation]\n{line}\n", 1))
    return path


def test_the_scenario_says_which_command_runs_the_tests(tmp_path):
    assert load_scenario(DEMO_SCENARIO, check_etalon=False).test_command == pattern_of(["unittest"])
    scenario = demo_with(tmp_path, r"test_command = '(make test|tox)\b'")
    assert load_scenario(scenario, check_etalon=False).test_command == r"(make test|tox)\b"
    builtin = json.loads(measured(tmp_path / "run", "pi", scenario=scenario).measures.read_text())
    # the demo's `python3 -m unittest` is no longer how this scenario runs its tests
    assert (builtin["builtin"]["calls_tests"], builtin["builtin"]["calls_shell"]) == (0, 1)
    assert builtin["builtin"]["tests_ran"] is False


def test_a_test_command_that_is_no_pattern_is_refused_at_load(tmp_path):
    scenario = demo_with(tmp_path, "test_command = '(pytest'")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario, check_etalon=False)
    said = caught.value.render()
    assert "validation.test_command" in said and "not a regular expression" in said
    assert "single quotes" in said  # the fix


def test_a_test_command_with_its_own_flags_is_taken_as_written(tmp_path):
    scenario = load_scenario(
        demo_with(tmp_path, "test_command = '(?i)MAKE TEST'"), check_etalon=False
    )
    assert classes(("bash", "run", {"command": "make test"}), pattern=scenario.test_command) == [
        "tests"
    ]


def test_the_documented_test_command_reads_as_the_page_says():
    page = (DEMO_SCENARIO.parents[2] / "docs" / "validators.md").read_text()
    pattern = re.search(r"(?m)^test_command = '([^']+)'", page).group(1)
    commands = ["make test", "cd app && python3 -m pytest -q | tail", "tox -e py311", "make"]
    found = classes(
        *[("bash", "run", {"command": command}) for command in commands], pattern=pattern
    )
    assert found == ["tests", "tests", "tests", "shell"]
