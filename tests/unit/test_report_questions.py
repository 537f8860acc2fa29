"""The report's overview: the judge against people, and frontier.svg with its words."""

from __future__ import annotations

import html
import re

from agentab.report import build_report
from agentab.synthesis.synthesize import synthesize
from tests.unit.test_judge_synthesis import by_hand_folder, fill, write_folder

T, F = True, False


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_the_overview_sets_the_judge_against_people_and_shows_the_frontier(tmp_path):
    folder = by_hand_folder(tmp_path)
    synthesize(folder)
    index = build_report(folder).index.read_text(encoding="utf-8")
    text = text_of(index)
    assert "The judge against people: on_task" in text
    assert "16 of 21 (76%); Cohen's κ = 0.52" in text
    # person true: 10 with the judge, 1 without; person false: 4 with the judge, 6 without.
    assert re.search(r"person true\s+10\s+1\s+person false\s+4\s+6", text)
    assert "rule 20 90% 11 63% [" in text  # 0.9 − 3/11
    assert '<img src="../frontier.svg"' in index
    assert "cost in tokens per run (input + output): the offline model costs nothing" in text
    assert "rule is on the frontier: +40 pp on_task at the same cost against nothing" in text


def test_before_any_label_the_overview_says_which_form_to_fill(tmp_path):
    folder = write_folder(tmp_path / "results" / "judged")
    fill(folder, "nothing", [T] * 20, {})
    fill(folder, "rule", [F] * 20, {})
    synthesize(folder)
    text = text_of(build_report(folder).index.read_text(encoding="utf-8"))
    assert "No labelled run yet: copy forms/people.blank.toml to forms/people.toml" in text
    assert "Corrected rates" not in text


def test_without_the_figure_the_overview_shows_no_broken_image(tmp_path):
    folder = by_hand_folder(tmp_path)
    synthesize(folder)
    (folder / "frontier.svg").unlink()
    index = build_report(folder).index.read_text(encoding="utf-8")
    assert "frontier.svg" not in index
