"""The answer first: synthesis.md opens with what is established, what is not, and what the runs
cannot say (a floor or a ceiling), before any table."""

from __future__ import annotations

from agentab.synthesis.synthesize import synthesize
from tests.unit.test_synthesis import write_clear_effect, write_run, write_scenario


def test_the_answer_comes_before_every_table(tmp_path):
    folder = write_clear_effect(tmp_path / "results")
    synthesize(folder)
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    answer = text.index("## Answer")
    assert answer < text.index("## Matrix") < text.index("## Gaps against the reference")
    assert text.index("the rate of `ran_tests` is higher") < text.index("## Matrix")
    assert text.index("![Each gap against the reference") < text.index("## Matrix")
    assert "## Reading" not in text


def test_a_task_out_of_reach_is_named_not_left_as_no_gap(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=9)
    for rep in range(1, 10):
        for cell in ("nothing", "rule"):
            write_run(folder, cell, rep, {"ran_tests": False, "turns": 5 + rep % 2})
    synthesize(folder)
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    head = text[: text.index("## Matrix")]
    assert "No gap is established" in head
    assert "`ran_tests` is 0% in every cell and in the reference (0/9 in the reference)" in head
    assert "out of reach" in head


def test_a_ceiling_is_named(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=9)
    for rep in range(1, 10):
        for cell in ("nothing", "rule"):
            write_run(folder, cell, rep, {"ran_tests": True, "turns": 5})
    synthesize(folder)
    head = (folder / "synthesis.md").read_text(encoding="utf-8").split("## Matrix")[0]
    assert "(a ceiling)" in head
