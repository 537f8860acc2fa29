"""What a mining writes: prompts, TOML that parses whatever a commit's subject holds, and an
output folder that never mixes two minings or eats a folder of other files."""

from __future__ import annotations

import tomllib

import pytest

from agentab.errors import AgentabError
from agentab.mining.decide import Decision
from agentab.mining.history import Commit
from agentab.mining.output import (
    Mined,
    clear_earlier_mining,
    prompt_for,
    prompt_markers,
    task_block,
)

SUBJECT = 'Fix "quotes", \\backslashes\\ and a\ttab [#12]'


def commit(subject: str = SUBJECT, body: str = "Fixes #12.") -> Commit:
    return Commit("c" * 40, "p" * 40, subject, body, (("M", "a.py"), ("M", "tests/test_a.py")))


def test_the_prompt_is_the_named_issue_when_given_else_the_message():
    assert prompt_for(commit(), {"12": "The issue, as filed.\n"}) == "The issue, as filed.\n"
    assert prompt_for(commit(), {"13": "another"}) == f"{SUBJECT}\n\nFixes #12.\n"
    assert prompt_for(commit("Fix it", "See &#12; in HTML"), {"12": "x"}).startswith("Fix")


def test_a_task_block_parses_as_toml_whatever_the_subject_and_the_ids_hold():
    decision = Decision(None, "kept", ['tests/test_a.py::test_x["q"]'], ["tests/test_a.py::t\\b"])
    task = Mined("fix-quotes-ccccccc", commit(), "mined/fix-quotes-ccccccc", decision, "p\n")
    parsed = tomllib.loads(task_block(task))["tasks"]["fix-quotes-ccccccc"]
    assert parsed["fail_to_pass"] == ['tests/test_a.py::test_x["q"]']
    assert parsed["pass_to_pass"] == ["tests/test_a.py::t\\b"]
    assert parsed["tag"] == "mined/fix-quotes-ccccccc"


def test_two_prompts_with_one_first_line_are_told_apart_by_the_whole_prompt():
    tasks = [
        Mined(name, commit(), "t", Decision(None, "kept"), prompt)
        for name, prompt in (("a", "Fix it\n\none\n"), ("b", "Fix it\n\ntwo\n"), ("c", "Else\n"))
    ]
    assert prompt_markers(tasks) == ["Fix it\n\none", "Fix it\n\ntwo", "Else"]


def test_an_earlier_minings_files_are_removed_and_a_folder_of_other_files_refused(tmp_path):
    earlier = tmp_path / "earlier"
    (earlier / "hidden" / "old-task").mkdir(parents=True)
    (earlier / "mined.json").write_text("{}")
    (earlier / "notes.txt").write_text("mine")
    clear_earlier_mining(earlier)
    assert sorted(p.name for p in earlier.iterdir()) == ["notes.txt"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "scenario.toml").write_text("[scenario]\n")
    with pytest.raises(AgentabError, match="holds other files than a mining's"):
        clear_earlier_mining(other)
    assert (other / "scenario.toml").exists()
