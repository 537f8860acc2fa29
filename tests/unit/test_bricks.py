"""Files placed in a clone are listed in .git/info/exclude, so result.patch never counts them."""

import subprocess

import pytest

from agentab.errors import AgentabError
from agentab.scenario.bricks import place_in_clone


def test_placed_files_are_excluded_from_the_agents_work(tmp_path):
    clone = tmp_path / "clone"
    clone.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
    source = tmp_path / "rule.md"
    source.write_text("a rule\n")
    skill = tmp_path / "skill"
    (skill / "sub").mkdir(parents=True)
    (skill / "sub" / "SKILL.md").write_text("x\n")
    placed = place_in_clone(clone, {"AGENTS.md": source, ".claude/skills/s": skill})
    place_in_clone(clone, {"AGENTS.md": source})  # twice: listed once
    assert placed == ["AGENTS.md", ".claude/skills/s"]
    exclude = (clone / ".git" / "info" / "exclude").read_text()
    assert exclude.count("/AGENTS.md\n") == 1
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == ""


@pytest.mark.parametrize("rel", ["../escape.md", "/etc/x", ".git/hooks/pre-commit"])
def test_a_brick_cannot_be_placed_outside_the_work_tree(tmp_path, rel):
    (tmp_path / "f").write_text("x")
    with pytest.raises(AgentabError):
        place_in_clone(tmp_path, {rel: tmp_path / "f"})


def test_a_brick_may_not_overwrite_a_file_of_the_etalon(tmp_path):
    clone = tmp_path / "clone"
    clone.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=clone, check=True)
    (clone / "AGENTS.md").write_text("the repository's own\n")
    source = tmp_path / "rule.md"
    source.write_text("a rule\n")
    with pytest.raises(AgentabError, match="overwrite `AGENTS.md`"):
        place_in_clone(clone, {"AGENTS.md": source})
    assert (clone / "AGENTS.md").read_text() == "the repository's own\n"
