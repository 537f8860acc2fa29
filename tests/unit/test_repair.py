"""A results folder made consistent at start: bad per-run files go, with what depends on them."""

from __future__ import annotations

import json
from pathlib import Path

from agentab.layout import ResultsFolder
from agentab.workflow import repair as repair_module
from agentab.workflow.repair import dry_run_asked, repair_scenario

RUNS = [("a", "a", 1), ("b", "b", 1)]


def folder(tmp_path: Path) -> ResultsFolder:
    results = ResultsFolder(tmp_path / "demo")
    for cell, slug, rep in RUNS:
        run = results.run(slug, rep)
        run.path.mkdir(parents=True)
        run.record.write_text(json.dumps({"outcome": {"status": "completed"}}))
        run.validator_output("v").parent.mkdir()
        run.validator_output("v").write_text(json.dumps({"ok": True}))
        measures = {"cell": cell, "rep": rep, "status": "valid", "metrics": {}}
        run.measures.write_text(json.dumps(measures))
    results.output("synthesis.md").write_text("old\n")
    return results


def test_a_healthy_folder_is_left_alone(tmp_path):
    results = folder(tmp_path)
    repair = repair_scenario(results, RUNS, ["v"], dry=False)
    assert repair.removed == [] and not repair.synthesis_due
    assert results.output("synthesis.md").exists()


def test_bad_files_go_with_their_dependents_and_the_synthesis_is_due(tmp_path):
    results = folder(tmp_path)
    a, b = results.run("a", 1), results.run("b", 1)
    a.validator_output("v").write_text("garbage")
    b.measures.write_text(json.dumps({"cell": "a", "rep": 1, "status": "valid", "metrics": {}}))
    repair = repair_scenario(results, RUNS, ["v"], dry=False)
    assert not a.validator_output("v").exists() and not a.measures.exists()
    assert a.record.exists()  # upstream of the bad file: kept
    assert not b.measures.exists() and "belongs to another run" in repair.removed[-1]
    assert repair.unmeasured == 2 and repair.synthesis_due
    assert not results.output("synthesis.md").exists()


def test_a_dry_run_only_tells(tmp_path):
    results = folder(tmp_path)
    results.run("a", 1).record.write_text("{}")
    repair = repair_scenario(results, RUNS, ["v"], dry=True)
    assert results.run("a", 1).measures.exists() and results.output("synthesis.md").exists()
    assert any("would remove" in line for line in repair.lines(dry=True))


def test_a_dry_run_is_recognised_on_the_command_line():
    assert dry_run_asked(["snakemake", "-n"]) and dry_run_asked(["snakemake", "-np"])
    assert dry_run_asked(["snakemake", "--dry-run", "--cores", "2"])
    assert not dry_run_asked(["snakemake", "--cores", "8", "--configfile", "x.yaml"])


def test_a_file_found_well_formed_is_read_again_only_when_it_changed(tmp_path, monkeypatch):
    results, store = folder(tmp_path), tmp_path / "state" / "verified" / "demo.json"
    assert repair_scenario(results, RUNS, ["v"], dry=False, verified_store=store).removed == []
    read = []
    original = repair_module._read
    monkeypatch.setattr(repair_module, "_read", lambda path: read.append(path) or original(path))
    assert repair_scenario(results, RUNS, ["v"], dry=False, verified_store=store).removed == []
    assert read == []  # every file unchanged since it was found well-formed: one stat each
    measures = results.run("b", 1).measures
    measures.write_text(measures.read_text()[:10])  # truncated since
    repair = repair_scenario(results, RUNS, ["v"], dry=False, verified_store=store)
    assert read == [measures] and not measures.exists() and repair.synthesis_due
    # Another shape of the scenario (a validator more) forgets what was found before.
    read.clear()
    repair_scenario(results, RUNS, ["v", "w"], dry=False, verified_store=store)
    assert results.run("a", 1).record in read
