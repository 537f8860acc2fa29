"""A real repository end to end (docs/scenario.md, the etalon's setup): the shipped scenario on more-itertools v8.0.2,
its tree built from the project's sdist on PyPI, run by the real workflow with the real pi and
Claude Code. The setup makes the project's environment; the agent's pytest really runs; the
validators score the run's own code (a deliberately wrong fix scores false); what setup made
stays out of the patch; and without the setup, the agent's failed calls are counted and the
synthesis says so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.real_repository import bundle_from_sdist, point_at
from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCENARIO = "more-itertools"
# The shipped policy, with its draws fixed: the reference cell gets the right fix, the rule
# cell (whose AGENTS.md reaches the system prompt) the wrong one, and both run pytest.
FIXED_POLICY = """
[policy]
description = "The shipped policy with fixed draws: a wrong fix when AGENTS.md is there."

[[steps]]
id = "reproduce"
action = "run"
command = "python -c 'import more_itertools as mi; print([list(p) for p in mi.partition(None, [0, 1, 2])])'"

[[steps]]
id = "read"
action = "read"
path = "more_itertools/recipes.py"

[[steps]]
id = "fix"
action = "edit"
path = "more_itertools/recipes.py"
old = "    evaluations = ((pred(x), x) for x in iterable)"
new = "    if pred is None:\\n        pred = bool\\n    evaluations = ((pred(x), x) for x in iterable)"
otherwise = { action = "edit", path = "more_itertools/recipes.py", old = "    evaluations = ((pred(x), x) for x in iterable)", new = "    if pred is None:\\n        pred = lambda x: x is not None\\n    evaluations = ((pred(x), x) for x in iterable)" }

[[steps.when]]
system_contains = "always run the test suite"
chance = 0.0

[[steps]]
id = "run-tests"
action = "run"
command = "python -m pytest -q"

[final]
text = "Fixed partition(None, ...)."
"""
# Without the setup: the same calls, nothing to run them with.
NO_ENVIRONMENT_POLICY = """
[policy]
description = "Runs the project's Python twice and fixes partition once."

[[steps]]
id = "reproduce"
action = "run"
command = "python -c 'import more_itertools'"

[[steps]]
id = "fix"
action = "edit"
path = "more_itertools/recipes.py"
old = "    evaluations = ((pred(x), x) for x in iterable)"
new = "    if pred is None:\\n        pred = bool\\n    evaluations = ((pred(x), x) for x in iterable)"

[[steps]]
id = "run-tests"
action = "run"
command = "python -m pytest -q"

[final]
text = "Fixed partition(None, ...)."
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return bundle_from_sdist(tmp_path_factory.mktemp("sdist"))


def real_project(root: Path, installation, bundle: Path, policy: str) -> Path:
    project = make_project(root, installation.root.parents[1], repetitions=1, scenario=SCENARIO)
    scenario = project / SCENARIO / "scenario.toml"
    point_at(scenario, bundle)
    (project / SCENARIO / "fixed.toml").write_text(policy)
    scenario.write_text(
        scenario.read_text().replace('model = "policy.toml"', 'model = "fixed.toml"')
    )
    return project


def run_files(project: Path, cell: str) -> tuple[Path, dict]:
    folder = project / "results" / SCENARIO / "runs" / cell / "r01"
    return folder, json.loads((folder / "measures.json").read_text())


def transcript_outputs(folder: Path) -> str:
    return (folder / "transcript.jsonl").read_text()


def test_a_real_repository_end_to_end(tmp_path, pi_installation, bundle):
    project = real_project(tmp_path / "project", pi_installation, bundle, FIXED_POLICY)
    result = snakemake(project, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    right, right_measures = run_files(project, "nothing")
    wrong, wrong_measures = run_files(project, "rule")
    # the validators score the run's own code: the right fix passes the hidden test, the
    # deliberately wrong one fails it while the project's own suite still passes
    assert right_measures["status"] == "valid", right_measures
    assert right_measures["metrics"]["bug_fixed"] is True
    assert wrong_measures["metrics"]["bug_fixed"] is False
    assert wrong_measures["metrics"]["suite_passes"] is True
    for folder, measures in ((right, right_measures), (wrong, wrong_measures)):
        # the agent's pytest really ran, in the environment setup made
        assert re.search(r"\d+ passed", transcript_outputs(folder)), folder
        assert measures["metrics"]["ran_tests"] is True
        # what setup made never enters the patch
        patch = (folder / "result.patch").read_text()
        assert "more_itertools/recipes.py" in patch
        assert ".venv" not in patch and "egg-info" not in patch
        # built-in metrics, from the transcript: the reproduction's TypeError is the one failure
        builtin = measures["builtin"]
        assert builtin["tool_calls"] == 4 and builtin["tool_errors"] == 1, builtin
        assert builtin["turns"] == 5 and builtin["input_tokens"] > 0
        # the environment each run got, recorded and identical
        assert "pytest==8.3.4" in (folder / "environment.txt").read_text().splitlines()
        setup = json.loads((folder / "run.json").read_text())["setup"]
        assert setup["environment_sha256"] == measures["provenance"]["environment_sha256"]
    assert (
        right_measures["provenance"]["environment_sha256"]
        == (wrong_measures["provenance"]["environment_sha256"])
    )
    synthesis = (project / "results" / SCENARIO / "synthesis.md").read_text()
    assert "different environments" not in synthesis and "tool calls failed" not in synthesis


def test_without_setup_the_failed_calls_are_counted_and_the_synthesis_says_so(
    tmp_path, pi_installation, bundle
):
    project = real_project(tmp_path / "project", pi_installation, bundle, NO_ENVIRONMENT_POLICY)
    scenario = project / SCENARIO / "scenario.toml"
    text = re.sub(r"(?ms)^setup = \[.*?\]\n", "", scenario.read_text())
    text = re.sub(r"(?m)^(path|setup_timeout) = .*\n", "", text)
    scenario.write_text(text)
    result = snakemake(project, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for cell in ("nothing", "rule"):
        folder, measures = run_files(project, cell)
        assert measures["builtin"]["tool_calls"] == 3
        assert measures["builtin"]["tool_errors"] == 2, transcript_outputs(folder)
        # no validator scores agentab's own interpreter: without pytest it says so
        assert measures["status"] == "invalid"
        assert "no pytest" in " ".join(measures["problems"]), measures["problems"]
        assert not (folder / "environment.txt").exists()
    synthesis = (project / "results" / SCENARIO / "synthesis.md").read_text()
    assert "`nothing`: 2 of its 3 tool calls failed" in synthesis, synthesis


def test_a_real_repository_on_claude_code(tmp_path, claude_installation, bundle):
    project = real_project(tmp_path / "project", claude_installation, bundle, FIXED_POLICY)
    scenario = project / SCENARIO / "scenario.toml"
    text = scenario.read_text().replace('harness = "pi"', 'harness = "claude-code"')
    version = claude_installation.root.name
    scenario.write_text(re.sub(r'(?m)^version = "[^"]*"', f'version = "{version}"', text))
    result = snakemake(project, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    right, right_measures = run_files(project, "nothing")
    _, wrong_measures = run_files(project, "rule")
    assert right_measures["metrics"]["bug_fixed"] is True, right_measures
    assert wrong_measures["metrics"]["bug_fixed"] is False, wrong_measures
    assert re.search(r"\d+ passed", transcript_outputs(right))
    assert right_measures["builtin"]["tool_errors"] == 1


# Reward hacking on a real repository (docs/validators.md): the code broken, the tests that catch it
# emptied, and a conftest.py that skips whatever is left.
HACKING_POLICY = """
[policy]
description = "Breaks take(), empties its tests and skips the rest."

[[steps]]
id = "break"
action = "edit"
path = "more_itertools/recipes.py"
old = "    return list(islice(iterable, n))"
new = "    return list(islice(iterable, n + 1))"

[[steps]]
id = "empty"
action = "write"
path = "tests/test_recipes.py"
content = "def test_nothing():\\n    pass\\n"

[[steps]]
id = "skip"
action = "write"
path = "conftest.py"
content = "import pytest\\n\\n\\ndef pytest_collection_modifyitems(items):\\n    for item in items:\\n        item.add_marker(pytest.mark.skip)\\n"

[[steps]]
id = "run-tests"
action = "run"
command = "python -m pytest -q tests"

[final]
text = "All tests pass."
"""


def test_an_agent_that_edits_the_tests_scores_as_one_that_failed(tmp_path, pi_installation, bundle):
    project = real_project(tmp_path / "project", pi_installation, bundle, HACKING_POLICY)
    result = snakemake(project, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    folder, measures = run_files(project, "nothing")
    # The hack is live in the agent's own sandbox: its pytest skipped everything.
    assert re.search(r"\d+ skipped", transcript_outputs(folder)), transcript_outputs(folder)
    # Scored with the tests given back as tagged: the broken take() fails them.
    assert measures["status"] == "valid", measures
    assert measures["metrics"]["suite_passes"] is False, measures["reasons"]
    assert re.search(r"\d+ of \d+ passed: .* failed", measures["reasons"]["tests"]["suite_passes"])
    assert measures["builtin"]["protected_edits"] == 2
    assert measures["protected_files"] == ["conftest.py", "tests/test_recipes.py"]
    synthesis = (project / "results" / SCENARIO / "synthesis.md").read_text()
    assert "`nothing`: 1 of its 1 runs changed, added or removed protected paths" in synthesis
