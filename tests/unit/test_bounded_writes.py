"""A file agentab writes from what a run produced is bounded as it is written."""

from __future__ import annotations

import json

from agentab.confinement.limits import Limits, limit_reason
from agentab.files import write_jsonl


def test_a_transcript_keeps_its_lines_up_to_the_cap_and_says_it_left_some_out(tmp_path):
    lines = ({"text": "x" * 100, "n": n} for n in range(10**6))  # never held whole
    path = tmp_path / "transcript.jsonl"
    assert write_jsonl(lines, path, max_bytes=10_000) is True
    kept = [json.loads(line) for line in path.read_text().splitlines()]
    assert path.stat().st_size <= 10_000 and [line["n"] for line in kept] == list(range(len(kept)))
    assert write_jsonl([{"a": 1}], path, max_bytes=10_000) is False


def test_a_run_over_its_output_bound_is_failed_at_its_limit_in_words():
    limits = Limits(memory=1 << 30, processes=64, disk=256 << 20, patch=1 << 20)
    assert limit_reason(["output"], limits).startswith("limit output: ")
    assert "256M" in limit_reason(["output"], limits)
