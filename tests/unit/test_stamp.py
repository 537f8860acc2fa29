"""A verdict that cannot change silently: gaps.csv and synthesis.md name the draw method and
agentab's version, and a synthesis that replaces one stamped otherwise says so."""

from __future__ import annotations

import csv

from agentab.synthesis import tables as stamp
from agentab.synthesis.synthesize import synthesize
from tests.unit.test_synthesis import write_clear_effect


def rows(folder) -> list[dict]:
    with (folder / "gaps.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_every_gap_row_and_synthesis_md_carry_the_method_and_version(tmp_path):
    folder = write_clear_effect(tmp_path / "results")
    synthesize(folder)
    method, version = stamp.current_stamp()
    assert {(row["method"], row["agentab"]) for row in rows(folder)} == {(method, version)}
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert f"Verdicts drawn with method `{method}` by agentab {version}" in text
    synthesize(folder)  # the same method again: nothing to say
    assert "replaces one made" not in (folder / "synthesis.md").read_text(encoding="utf-8")


def test_a_resynthesis_with_another_method_says_so(tmp_path):
    folder = write_clear_effect(tmp_path / "results")
    synthesize(folder)
    gaps = folder / "gaps.csv"
    gaps.write_text(gaps.read_text().replace(stamp.DRAW_METHOD, "draws-0"), encoding="utf-8")
    synthesize(folder)
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "this synthesis replaces one made with method `draws-0`" in text
    assert f"drawn with method `{stamp.DRAW_METHOD}`" in text


def test_a_gaps_csv_from_before_the_stamp_is_named(tmp_path):
    folder = write_clear_effect(tmp_path / "results")
    (folder / "gaps.csv").write_text("cell,metric,verdict\nrule,ran_tests,established\n")
    synthesize(folder)
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "an agentab that did not stamp its method" in text
