"""An offline policy's file steps played on the etalon's tree before any run
(`offline_model/edits.py`): each step that would fail in the runs is named."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from agentab import etalon
from agentab.offline_model.edits import edit_problems
from agentab.offline_model.policy import load_policy, shipped_policy_names
from agentab.run.policy_check import policy_edit_problems, tree_reader
from agentab.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
CALC = "def mean(values):\n    return sum(values) / (len(values) - 1)\n"


def tree(files: dict[str, str]):
    return lambda path: files.get(path)


def steps(text: str) -> list:
    return tomllib.loads(text)["steps"]


def keys(problems) -> list[str]:
    return [problem.key for problem in problems]


def test_an_edit_needs_its_old_text_exactly_once_in_the_file_as_the_tag_has_it():
    twice = steps('[[steps]]\naction = "edit"\npath = "calc.py"\nold = "values"\nnew = "xs"\n')
    (found,) = edit_problems(twice, tree({"calc.py": CALC}))
    assert found.key == "steps[1]"
    assert found.message.startswith(
        "step 1 (edit calc.py): its old text 'values' is found 3 times in calc.py as the tag has it"
    )
    assert "quote more of the lines" in found.fix
    never = steps('[[steps]]\naction = "edit"\npath = "calc.py"\nold = "median"\nnew = "x"\n')
    (found,) = edit_problems(never, tree({"calc.py": CALC}))
    assert "its old text 'median' is not found in calc.py" in found.message
    once = steps('[[steps]]\naction = "edit"\npath = "./calc.py"\nold = "- 1"\nnew = ""\n')
    assert edit_problems(once, tree({"calc.py": CALC})) == []


def test_a_step_follows_the_edits_and_writes_before_it():
    policy = steps(
        """
[[steps]]
action = "edit"
path = "calc.py"
old = "len(values) - 1"
new = "count(values)"
[[steps]]
action = "edit"
path = "/workspace/calc.py"
old = "count(values)"
new = "len(values)"
[[steps]]
action = "write"
path = "NOTES.md"
content = "a note"
[[steps]]
action = "read"
path = "NOTES.md"
[[steps]]
action = "edit"
path = "calc.py"
old = "len(values) - 1"
new = "x"
"""
    )
    (found,) = edit_problems(policy, tree({"calc.py": CALC}))
    assert found.key == "steps[5]"  # step 1 took that text away
    assert "is not found in calc.py as step 1, step 2 left it" in found.message


def test_every_way_a_chance_may_go_is_played_its_otherwise_included():
    policy = steps(
        """
[[steps]]
action = "edit"
path = "calc.py"
old = "len(values) - 1"
new = "len(values)"
chance = 0.9
otherwise = { action = "edit", path = "calc.py", old = "len(values) + 1", new = "x" }
[[steps]]
action = "write"
path = "NOTES.md"
content = "a"
chance = 0.1
[[steps.when]]
system_contains = "rule"
chance = 1.0
[[steps]]
action = "edit"
path = "NOTES.md"
old = "a"
new = "b"
[[steps]]
tool = "brick_probe"
input = { path = "nowhere.py" }
"""
    )
    problems = edit_problems(policy, tree({"calc.py": CALC}))
    assert keys(problems) == ["steps[1].otherwise", "steps[3]"]
    assert "step 1's otherwise (edit calc.py): its old text 'len(values) + 1' is not found" in (
        problems[0].message
    )
    assert "no file NOTES.md, and step 2 may not happen to write it" in problems[1].message


def test_a_read_or_an_edit_of_a_file_the_tag_lacks_is_named():
    policy = steps('[[steps]]\naction = "read"\npath = "src/calc.py"\n')
    (found,) = edit_problems(policy, tree({"calc.py": CALC}))
    assert found.message.startswith(
        "step 1 (read src/calc.py): the etalon's tag has no file src/calc.py, and no earlier "
        "step writes it"
    )


@pytest.fixture
def demo_tree(tmp_path: Path) -> Path:
    scenario = load_scenario(REPO / "scenarios" / "demo" / "scenario.toml")
    checkout, _ = etalon.pristine_checkout(
        scenario.etalon.location, scenario.etalon.tag, tmp_path / "mirrors"
    )
    return checkout


def test_every_shipped_policy_plays_on_the_demo_etalon(demo_tree: Path):
    names = shipped_policy_names()
    assert len(names) >= 10
    for name in names:
        assert edit_problems(load_policy(name).steps, tree_reader(demo_tree)) == [], name


def test_a_scenario_is_refused_with_the_policy_file_the_step_and_the_tag(tmp_path: Path):
    folder = tmp_path / "demo"
    shutil.copytree(REPO / "scenarios" / "demo", folder)
    (folder / "twice.toml").write_text(
        '[policy]\n[[steps]]\nid = "fix"\naction = "edit"\npath = "calc.py"\nold = "values"\n'
        'new = "xs"\n'
    )
    text = (folder / "scenario.toml").read_text()
    (folder / "scenario.toml").write_text(
        text.replace('model = "demo" ', 'model = "twice.toml" ', 1)
    )
    scenario = load_scenario(folder / "scenario.toml")
    (found,) = policy_edit_problems(scenario, tmp_path / "mirrors")
    assert found.file == str((folder / "twice.toml").resolve())
    assert found.key == "steps[1]"
    assert found.message.startswith("the offline policy `twice.toml` on etalon tag v1.0: step 1")
