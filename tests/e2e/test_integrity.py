"""Files changed after agentab wrote them are flagged (docs/workflow.md, `synthesis/runs/integrity.py`):
a measures.json, a run.json, a validator's output and a request log, each edited in place with
its size and time kept, as a person, a tool or a process left behind could. Each run ends
invalid with `changed-after-the-run` in `agentab runs`, the report and the synthesis, and stays
out of the verdicts until redone; an edited measures.json is measured again from its sealed
sources."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

AGENTAB = [sys.executable, "-m", "agentab.cli"]


def forge(path, old: str, new: str) -> None:
    """Replace `old` by `new` (the same length) and put the file's times back."""
    assert len(old) == len(new)
    stat = path.stat()
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def agentab(project, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*AGENTAB, *args], cwd=project, capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def status_of(project, run: str) -> dict:
    return json.loads((project / "results" / "demo" / "runs" / run / "measures.json").read_text())


def test_every_file_changed_after_the_run_is_flagged(tmp_path, pi_installation):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    assert snakemake(project).returncode == 0
    runs = project / "results" / "demo" / "runs"
    assert {status_of(project, r)["status"] for r in ("nothing-off/r01", "rule-off/r01")} == {
        "valid"
    }

    # a measures.json and a request log: the synthesis and `agentab runs` tell
    measures = runs / "nothing-off" / "r01" / "measures.json"
    flipped = ('"tests_pass": false', '"tests_pass":  true')
    if flipped[0] not in measures.read_text():
        flipped = ('"tests_pass": true', '"tests_pass":false')
    forge(measures, *flipped)  # a metric turned round
    forge(runs / "rule-off" / "r01" / "model-requests.jsonl", '"model"', '"MODEL"')
    done = agentab(project, "synthesize", "results/demo")
    assert done.returncode == 0, done.stderr
    synthesis = (project / "results" / "demo" / "synthesis.md").read_text()
    assert "changed-after-the-run: measures.json changed after agentab wrote it" in synthesis
    listed = agentab(project, "runs", "results/demo", "--status", "invalid")
    assert "nothing-off/r01" in listed.stdout and "rule-off/r01" in listed.stdout, listed.stdout
    assert "model-requests.jsonl changed after agentab wrote it" in listed.stdout
    report = agentab(project, "report", "results/demo")
    assert report.returncode == 0, report.stderr
    page = (project / "results" / "demo" / "report" / "runs" / "rule-off" / "r01.html").read_text()
    assert "changed-after-the-run" in page

    # a run.json and a validator's output: the next invocation measures them again, as invalid,
    # and the edited measures.json again from its sealed sources
    forge(runs / "rule-high" / "r01" / "run.json", '"exit_code": 0', '"exit_code": 7')
    forge(runs / "nothing-high" / "r01" / "validators" / "tests.json", '"tests"', '"TESTS"')
    result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert status_of(project, "nothing-off/r01")["status"] == "valid"  # measured again
    for run, name in (("rule-high/r01", "run.json"), ("nothing-high/r01", "validators/tests.json")):
        measures = status_of(project, run)
        assert measures["status"] == "invalid", measures
        assert any(p.startswith(f"changed-after-the-run: {name}") for p in measures["problems"])
    synthesis = (project / "results" / "demo" / "synthesis.md").read_text()
    assert "changed-after-the-run: run.json" in synthesis
    # flagged once: the next invocation has nothing to do
    again = snakemake(project, "-n")
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-2000:]


def counts_in(synthesis: str) -> dict[str, int]:
    """`… : 3 valid, 1 invalid, 0 failed, 0 missing.` of the synthesis's opening line."""
    found = re.search(r"(\d+) valid, (\d+) invalid, (\d+) failed", synthesis)
    assert found, synthesis[:2000]
    return dict(zip(("valid", "invalid", "failed"), map(int, found.groups()), strict=True))


def test_the_synthesis_and_agentab_runs_count_a_changed_receipt_alike(tmp_path, pi_installation):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    assert snakemake(project).returncode == 0
    results = project / "results" / "demo"
    before = counts_in((results / "synthesis.md").read_text())
    receipt = results / "runs" / "rule-off" / "r01" / "receipt.json"
    forge(receipt, '"requests"', '"REQUESTS"')  # after the run was measured, size and time kept
    assert agentab(project, "synthesize", "results/demo").returncode == 0
    synthesis = (results / "synthesis.md").read_text()
    listed = agentab(project, "runs", "results/demo")
    summary = re.search(r"4 runs: (.*)", listed.stderr).group(1)
    runs_counts = {status: int(n) for n, status in re.findall(r"(\d+) (\w+)", summary)}
    assert runs_counts.get("invalid", 0) >= 1
    assert counts_in(synthesis) == {
        s: runs_counts.get(s, 0) for s in ("valid", "invalid", "failed")
    }
    # The synthesis names the run, the file and how to redo it; the command works as printed.
    assert "1 run changed after agentab wrote its files, counted invalid" in synthesis
    assert "`runs/rule-off/r01` (receipt.json)" in synthesis
    command = re.search(r"redo: `(agentab redo [^`]+)`", synthesis).group(1)
    assert command == "agentab redo results/demo rule-off/r01"  # the folder as it was given
    redo = agentab(project, *command.split()[1:])
    assert redo.returncode == 0, redo.stderr
    assert snakemake(project).returncode == 0
    again = (results / "synthesis.md").read_text()
    assert "run changed after agentab wrote its files" not in again
    # The redo is named: the table holds a second attempt of that run.
    assert "1 run redone after a measured attempt (`agentab redo`)" in again
    assert counts_in(again) == before
