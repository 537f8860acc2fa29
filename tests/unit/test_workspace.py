"""Work folders name their owner, and the workflow's start removes those a killed step left
(`run/workspace.py`): an owner gone, or a claim cut short before it named anyone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agentab.run.workspace import CLAIM_GRACE_S, OWNER, claim, sweep_abandoned


def claimed_by_a_process_that_ended(folder: Path) -> None:
    code = f"from agentab.run.workspace import claim; from pathlib import Path; claim(Path({str(folder)!r}))"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_folder_whose_owner_ended_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    work = tmp_path / "work"
    gone, live = work / "gone", work / "live"
    claimed_by_a_process_that_ended(gone)
    (gone / "space" / "calc").mkdir(parents=True)  # its clone
    claim(live)  # this process: alive
    assert sweep_abandoned(work) == [gone]
    assert sorted(p.name for p in work.iterdir()) == ["live"]
    assert (live / OWNER).is_file() and not list(live.glob(".*partial"))


def test_a_claim_cut_short_is_removed_once_no_claim_could_still_be_under_way(tmp_path):
    work = tmp_path / "work"
    empty, partial, unknown = work / "empty", work / "partial", work / "unknown"
    for folder in (empty, partial, unknown):
        folder.mkdir(parents=True)
    (partial / f".{OWNER}.partial").write_text('{"pid": ')  # killed while writing it
    (unknown / "clone").mkdir()  # not made by a claim: not ours to judge
    made = empty.stat().st_mtime
    assert sweep_abandoned(work, now=made + 1) == []  # a claim may be under way
    later = made + CLAIM_GRACE_S + 1
    for folder in (empty, partial, unknown):
        os.utime(folder, (made, made))
    assert sorted(sweep_abandoned(work, now=later)) == [empty, partial]
    assert [p.name for p in work.iterdir()] == ["unknown"]
