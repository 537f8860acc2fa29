"""Validators are independent: the same context, their own checkout, no sibling's output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentab.etalon import checkout_with_patch
from agentab.validators import prepare_job

SIBLING_OUTPUTS = ("tests.json", "sibling-audit.json")

# A validator that goes looking for what its siblings found: in every folder it was handed
# (and the folder above each), and anywhere inside its checkout.
SNOOP = f"""
import json, sys
from pathlib import Path
context = json.loads(Path(sys.argv[1]).read_text())
handed = [Path(sys.argv[1]), Path(context["workdir"]), Path(context["patch"]),
          Path(context["transcript"])]
places = set()
for path in handed:
    folder = path if path.is_dir() else path.parent
    places.update([folder, folder.parent])
found = sorted(
    str(hit)
    for place in places
    for name in {SIBLING_OUTPUTS!r}
    for hit in (list(place.glob(name)) + list(place.glob("*/" + name))
                + (list(place.rglob(name)) if place == Path(context["workdir"]) else []))
)
print(json.dumps({{"metrics": {{"found_sibling": bool(found)}}, "reasons": {{"found": found}}}}))
"""


@pytest.fixture
def run(tmp_path: Path, calc_repo: Path) -> SimpleNamespace:
    """A finished run whose first validator has already written its output."""
    run_dir = tmp_path / "results" / "demo" / "runs" / "rule-off" / "r01"
    (run_dir / "validators").mkdir(parents=True)
    patch = run_dir / "result.patch"
    patch.write_text(
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n"
        " def mean(values):\n-    return sum(values) / (len(values) - 1)\n"
        "+    return sum(values) / len(values)\n"
    )
    (run_dir / "transcript.jsonl").write_text("")
    context = {
        "run": "opaque-1",
        "workdir": str(tmp_path / "clone-gone"),
        "task_prompt": "Fix mean().",
        "etalon": {"repo": str(calc_repo), "tag": "v1.0", "sha": "x"},
        "transcript": str(run_dir / "transcript.jsonl"),
        "patch": str(patch),
        "changed_files": ["calc.py"],
        "final_message": "Fixed.",
        "exit": {"status": "completed", "reason": "stop", "duration_s": 1.0},
        "usage": {"tokens": {"input": 1, "output": 1}, "cost_usd": 0.0},
    }
    context_path = run_dir / "context.json"
    context_path.write_text(json.dumps(context))
    (run_dir / "validators" / "tests.json").write_text('{"ok": true, "metrics": {"x": 1}}')
    scenario_dir = tmp_path / "scenario"
    scenario_dir.mkdir()
    (scenario_dir / "snoop.py").write_text(SNOOP)
    mirrors = tmp_path / "mirrors"

    def checkout(workdir: Path, patch_file: Path) -> None:
        checkout_with_patch(str(calc_repo), "v1.0", patch_file, workdir, mirrors)

    return SimpleNamespace(
        dir=run_dir,
        context_path=context_path,
        context=context,
        scenario_dir=scenario_dir,
        checkout=checkout,
        scratch=tmp_path / "scratch",
    )


def prepared(run: SimpleNamespace, name: str):
    spec = SimpleNamespace(name=name, mode="script", options={"run": ["snoop.py"]})
    return prepare_job(
        spec,
        scenario_dir=run.scenario_dir,
        context=run.context,
        files={"transcript": Path(run.context["transcript"]), "patch": Path(run.context["patch"])},
        scratch_dir=run.scratch / name,
        audit_dir=run.dir / "validators" / name,
        checkout=run.checkout,
    )


def snoop(run: SimpleNamespace, context_path: Path) -> dict:
    done = subprocess.run(
        [sys.executable, str(run.scenario_dir / "snoop.py"), str(context_path)],
        capture_output=True,
        text=True,
        check=True,
        env={},
        cwd=run.scenario_dir,
    )
    return json.loads(done.stdout)


def test_every_validator_gets_the_same_context_and_its_own_checkout(run):
    first, second = prepared(run, "tests"), prepared(run, "snoop")
    contexts = [job.context() for job in (first, second)]
    own_paths = ("workdir", "patch", "transcript", "trajectory")
    for context in contexts:
        assert {k: v for k, v in context.items() if k not in own_paths} == {
            k: v for k, v in run.context.items() if k not in own_paths
        }
        assert Path(context["patch"]).read_bytes() == Path(run.context["patch"]).read_bytes()
        assert Path(context["trajectory"]).parent == Path(context["transcript"]).parent
    assert first.workdir != second.workdir
    for job in (first, second):
        assert "len(values)\n" in (job.workdir / "calc.py").read_text()
    (first.workdir / "calc.py").write_text("broken by the first validator\n")
    assert "len(values)\n" in (second.workdir / "calc.py").read_text()


def test_a_validator_looking_for_a_siblings_output_finds_nothing(run):
    judge = prepared(run, "judge")
    (judge.audit_dir / "sibling-audit.json").write_text('{"on_task": true}')
    job = prepared(run, "snoop")
    found = snoop(run, job.context_path)
    assert found["metrics"] == {"found_sibling": False}, found["reasons"]


def test_the_snoop_does_find_outputs_when_handed_the_run_folder(run):
    # The control: handed the run's own context, the same validator finds the sibling's output.
    assert snoop(run, run.context_path)["metrics"] == {"found_sibling": True}


def test_a_retried_job_starts_from_empty_folders(run):
    job = prepared(run, "snoop")
    (job.audit_dir / "left-by-a-failed-attempt").write_text("x")
    (job.workdir.parent / "left-too").write_text("x")
    again = prepared(run, "snoop")
    assert not (again.audit_dir / "left-by-a-failed-attempt").exists()
    assert not (again.workdir.parent / "left-too").exists()
