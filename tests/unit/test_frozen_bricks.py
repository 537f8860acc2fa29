"""Bricks are frozen with the results: copied once by their hash, every run given a copy of
that copy, each checked against the hash the scenario had when it was loaded."""

from __future__ import annotations

import pytest

from agentab.harnesses.base import BrickFile, HarnessFault
from agentab.run.frozen_bricks import frozen_brick, run_copies
from agentab.scenario import content_sha256


def brick_at(path):
    return BrickFile("context_files", "bricks/rule.md", path, content_sha256(path))


def test_a_run_gets_a_copy_of_the_frozen_copy_even_once_the_source_changed(tmp_path):
    source = tmp_path / "scenario" / "bricks" / "rule.md"
    source.parent.mkdir(parents=True)
    source.write_text("Always run the tests.\n")
    brick, store = brick_at(source), tmp_path / "results" / "bricks"
    frozen = frozen_brick(brick, store)
    assert frozen == store / brick.sha256[:16] / "rule.md"
    source.write_text("Never run the tests.\n")  # edited while the workflow runs
    (copy,) = run_copies([brick], store, tmp_path / "run1")
    assert copy.path.read_text() == "Always run the tests.\n"
    assert copy.path != frozen and copy.sha256 == brick.sha256


def test_a_brick_edited_before_it_was_frozen_is_a_fault(tmp_path):
    source = tmp_path / "rule.md"
    source.write_text("Always run the tests.\n")
    brick = brick_at(source)
    source.write_text("Never run the tests.\n")
    with pytest.raises(HarnessFault, match="changed since the scenario was loaded"):
        run_copies([brick], tmp_path / "store", tmp_path / "run")
    assert not any((tmp_path / "store").iterdir())  # nothing half-frozen


def test_a_frozen_copy_that_changed_is_a_fault(tmp_path):
    folder = tmp_path / "skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\n")
    brick, store = brick_at(folder), tmp_path / "store"
    (frozen_brick(brick, store) / "SKILL.md").write_text("tampered\n")
    with pytest.raises(HarnessFault, match="frozen copy of the brick"):
        run_copies([brick], store, tmp_path / "run")


def test_a_byte_order_mark_reaches_no_harness(tmp_path):
    source = tmp_path / "rule.md"
    source.write_bytes(b"\xef\xbb\xbfAlways run the tests.\n")
    (copy,) = run_copies([brick_at(source)], tmp_path / "store", tmp_path / "run")
    assert copy.path.read_bytes() == b"Always run the tests.\n"
