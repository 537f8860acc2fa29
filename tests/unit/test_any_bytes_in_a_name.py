"""A file name is any bytes the agent chose: not UTF-8, a newline, a quote. The run's files,
its seal, its patch, and what people read of it hold such a name escaped, never split, never a
crash (a name that is not UTF-8 crashed the run step while it sealed run.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.etalon import TreeGit, fresh_clone, patch_files
from agentab.files import seal_holds, shown_path, write_json, write_jsonl, write_sealed_json
from agentab.harnesses.base import HarnessFault
from agentab.run import agent_run
from agentab.run.agent_run import perform_run
from agentab.scenario import load_scenario
from tests.conftest import make_git_repo
from tests.unit.test_run_attempts import DEMO, InstalledHarness, run_files

NOT_UTF8 = b"bad\xff.py"
NEWLINE = "two\nlines.py"


@pytest.fixture
def hostile_names(tmp_path: Path) -> list[str]:
    """The files of an agent's patch, read as git reads them, where two names are hostile."""
    repo = tmp_path / "repo"
    make_git_repo(repo, {"calc.py": "x = 1\n"})
    clone = tmp_path / "clone"
    fresh_clone(str(repo), "v1.0", clone, tmp_path / "mirrors")
    (clone / os.fsdecode(NOT_UTF8)).write_bytes(b"")
    (clone / NEWLINE).write_text("")
    (clone / "calc.py").write_text("x = 2\n")
    made = TreeGit(clone).patch()
    names = patch_files(made.patch)
    assert sorted(made.files) == sorted(names)
    return names


def test_a_name_that_is_not_utf8_is_sealed_and_reads_back_the_same(tmp_path, hostile_names):
    record = {"patch": {"files": hostile_names}}
    write_sealed_json(record, tmp_path / "run.json", "secret")
    text = (tmp_path / "run.json").read_text(encoding="utf-8")
    assert seal_holds(text, "secret")
    assert json.loads(text)["patch"]["files"] == hostile_names  # surrogateescape, round trip
    assert {os.fsencode(name) for name in hostile_names} >= {NOT_UTF8, NEWLINE.encode()}
    write_json(record, tmp_path / "context.json")
    assert not write_jsonl([record], tmp_path / "t.jsonl")
    assert json.loads((tmp_path / "t.jsonl").read_text())["patch"]["files"] == hostile_names


def test_a_name_is_shown_on_one_line_quoted_as_git_quotes_it(hostile_names):
    shown = sorted(shown_path(name) for name in hostile_names)
    assert shown == ['"bad\\377.py"', '"two\\nlines.py"', "calc.py"]
    assert all("\n" not in name for name in shown)
    assert shown_path("test_é.py") == "test_é.py"  # plain text stays as it is
    assert shown_path('a"b\\c') == '"a\\"b\\\\c"'


def test_a_crash_of_the_run_step_leaves_a_fault_and_no_traceback(tmp_path, monkeypatch):
    """The attempt is on record (faults.jsonl) and the step exits as on a fault: it was a
    traceback that left no trace, and the next invocation redid the run in silence."""

    def crashes(etalon, clone, mirrors_dir):
        "\udcff".encode()  # what sealing a name that is not UTF-8 did

    monkeypatch.setattr(agent_run, "get_harness", lambda name: InstalledHarness())
    monkeypatch.setattr(agent_run, "ensure_fresh_clone", crashes)
    scenario = load_scenario(DEMO, check_etalon=False)
    files = run_files(tmp_path / "r01")
    with pytest.raises(HarnessFault) as raised:
        perform_run(
            scenario,
            scenario.cells[0],
            1,
            files=files,
            work_root=tmp_path / "work",
            harnesses_dir=tmp_path / "harnesses",
            mirrors_dir=tmp_path / "mirrors",
        )
    assert isinstance(raised.value, AgentabError) and "UnicodeEncodeError" in raised.value.render()
    (fault,) = [json.loads(line) for line in files.faults.read_text().splitlines()]
    assert "UnicodeEncodeError" in fault["fault"]
    assert not files.record.exists()
