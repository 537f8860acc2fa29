"""A results folder made consistent at start: bad per-run files go, with what depends on them."""

from __future__ import annotations

import json
import os
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


def test_a_file_found_well_formed_is_parsed_again_only_when_its_content_changed(
    tmp_path, monkeypatch
):
    results, store = folder(tmp_path), tmp_path / "state" / "verified" / "demo.json"
    assert repair_scenario(results, RUNS, ["v"], dry=False, verified_store=store).removed == []
    parsed = []
    original = repair_module._parse
    monkeypatch.setattr(repair_module, "_parse", lambda text: parsed.append(text) or original(text))
    assert repair_scenario(results, RUNS, ["v"], dry=False, verified_store=store).removed == []
    assert parsed == []  # every file unchanged since it was found well-formed: hashed only
    measures = results.run("b", 1).measures
    measures.write_text(measures.read_text()[:10])  # truncated since
    repair = repair_scenario(results, RUNS, ["v"], dry=False, verified_store=store)
    assert len(parsed) == 1 and not measures.exists() and repair.synthesis_due
    # Another shape of the scenario (a validator more) forgets what was found before.
    parsed.clear()
    repair_scenario(results, RUNS, ["v", "w"], dry=False, verified_store=store)
    assert len(parsed) > 1


def test_a_file_edited_in_place_with_its_size_and_time_kept_is_checked_again(tmp_path):
    results, store = folder(tmp_path), tmp_path / "state" / "verified" / "demo.json"
    assert repair_scenario(results, RUNS, ["v"], dry=False, verified_store=store).removed == []
    measures = results.run("b", 1).measures
    before, stat = measures.read_text(), measures.stat()
    edited = before.replace('"cell"', '"cel_"', 1)  # same size, no longer this run's
    assert len(edited) == len(before) and edited != before
    measures.write_text(edited)
    os.utime(measures, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    repair = repair_scenario(results, RUNS, ["v"], dry=False, verified_store=store)
    assert [entry.split(":")[0] for entry in repair.removed] == [str(measures)]
    assert not measures.exists()


def test_files_built_from_a_file_that_is_gone_are_removed_so_the_chain_is_redone(tmp_path):
    # A rerun after an edit, stopped: Snakemake deleted the outputs of the jobs it had started.
    results = folder(tmp_path)
    results.run("a", 1).validator_output("v").unlink()
    results.run("b", 1).record.unlink()
    repair = repair_scenario(results, RUNS, ["v"], dry=False)
    assert not results.run("a", 1).measures.exists()
    assert not results.run("b", 1).measures.exists()
    assert not results.run("b", 1).validator_output("v").exists()
    assert repair.unmeasured == 2 and repair.synthesis_due
    assert any("was built from run.json, which is gone" in line for line in repair.lines())
