"""run.json, receipt.json and measures.json: one definition each, a `schema_version` stamped by
the writer and checked by the readers; a file without one is version 1, a newer one is refused
with the file and the fix (docs/workflow.md, "The files of a run")."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import get_type_hints

import pytest

from agentab.budget.spending import RunSpending
from agentab.errors import AgentabError
from agentab.harnesses.base import Invocation, Outcome, StreamFacts
from agentab.harnesses.pi import PiHarness
from agentab.report.receipt import receipt_view
from agentab.run.process import ProcessResult
from agentab.run.receipts import build_receipt
from agentab.run.record import AgentRun, run_record
from agentab.runfiles import (
    MEASURES_VERSION,
    RECEIPT_VERSION,
    RUN_VERSION,
    MeasuresJson,
    ReceiptJson,
    RunJson,
    schema_version,
)
from agentab.synthesis.runs.measures import build_measures, measure_run
from agentab.synthesis.runs.results import load_frozen_scenario, read_runs

ROOT = Path(__file__).resolve().parents[2]
DEMO_RESULTS = ROOT / "tests" / "unit" / "fixtures" / "demo-results"


def keys(definition) -> set[str]:
    return set(get_type_hints(definition))


@pytest.fixture(scope="module")
def demo():
    return load_frozen_scenario(DEMO_RESULTS)


def test_run_json_is_stamped_and_holds_only_defined_keys(demo):
    cell = demo.cell("rule · off")
    run = AgentRun(
        invocation=Invocation(argv=["pi"], env={"HOME": "/h"}, cwd=Path("/w")),
        process=ProcessResult(exit_code=0, timed_out=False, duration_s=1.0),
        facts=StreamFacts(turns=2),
        outcome=Outcome("completed"),
        started="2026-12-07T00:00:00+00:00",
        limits={},
    )
    record = run_record(demo, cell, 1, PiHarness(), "0" * 40, run, 7, "none")
    assert record["schema_version"] == RUN_VERSION
    assert set(record) <= keys(RunJson), set(record) - keys(RunJson)


def test_every_key_the_run_step_adds_to_run_json_is_defined():
    source = ROOT / "src" / "agentab" / "run" / "agent_run.py"
    added = {
        node.slice.value
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "record"
        and isinstance(node.slice, ast.Constant)
    }
    assert "files" in added  # the scan found the record's keys
    assert added <= keys(RunJson), added - keys(RunJson)


def test_a_run_the_budget_refused_leaves_stamped_files(tmp_path, demo):
    folder = tmp_path / "results" / "demo" / "runs" / "rule-off" / "r01"
    files = SimpleNamespace(
        folder=folder,
        **{
            name: folder / file
            for name, file in [
                ("stream", "stream.jsonl"),
                ("transcript", "transcript.jsonl"),
                ("patch", "result.patch"),
                ("model_requests", "model-requests.jsonl"),
                ("receipt", "receipt.json"),
                ("record", "run.json"),
            ]
        },
    )
    spending = RunSpending.__new__(RunSpending)
    spending.scenario, spending.cell, spending.rep = demo, demo.cell("rule · off"), 1
    spending.files, spending.run = files, "rule-off/r01"
    spending.decision = SimpleNamespace(
        reason=lambda: "budget reached",
        budget_usd=1.0, spent_usd=1.0, in_flight_usd=0.0, estimate_usd=0.1, estimate_from="x",
    )  # fmt: skip
    record = spending.refuse()
    receipt = json.loads(files.receipt.read_text())
    assert json.loads(files.record.read_text())["schema_version"] == RUN_VERSION
    assert receipt["schema_version"] == RECEIPT_VERSION
    assert set(record) <= keys(RunJson), set(record) - keys(RunJson)
    assert set(receipt) <= keys(ReceiptJson), set(receipt) - keys(ReceiptJson)


def test_receipt_json_is_stamped_and_holds_only_defined_keys(tmp_path):
    log = tmp_path / "model-requests.jsonl"
    body = {"model": "demo", "messages": [{"role": "user", "content": "Fix."}]}
    log.write_text(json.dumps({"seq": 1, "api": "openai-chat", "body": body}) + "\n")
    agent = SimpleNamespace(model="demo", thinking="off", provider="offline")
    agent.thinking_provider = "offline"
    cell = SimpleNamespace(agent=agent, bricks=[])
    receipt = build_receipt(cell, "demo", PiHarness(), StreamFacts(), log, None)
    assert receipt["schema_version"] == RECEIPT_VERSION
    assert set(receipt) <= keys(ReceiptJson), set(receipt) - keys(ReceiptJson)


def test_measures_json_is_stamped_and_holds_only_defined_keys(demo):
    cell = demo.cell("rule · off")
    run = {"outcome": {"status": "completed"}, "facts": {"turns": 2}}
    measures = build_measures(demo, cell, 1, run, {}, {}, {"turns": 2})
    assert measures["schema_version"] == MEASURES_VERSION
    assert set(measures) <= keys(MeasuresJson), set(measures) - keys(MeasuresJson)
    # What the measure step wrote of the demo's real runs (before the key had its name: the old
    # spelling `schema` is the one key the definition no longer has).
    for path in DEMO_RESULTS.glob("runs/*/r*/measures.json"):
        written = set(json.loads(path.read_text()))
        assert written - {"schema"} <= keys(MeasuresJson), (path, written - keys(MeasuresJson))


@pytest.mark.parametrize("data", [{}, {"schema": 1}, {"schema_version": 1}])
def test_a_file_without_a_newer_version_is_version_1(data):
    assert schema_version(data, "runs/a/r01/run.json", 1) == 1


def test_a_newer_version_is_refused_naming_the_file_and_the_fix():
    with pytest.raises(AgentabError) as raised:
        schema_version({"schema_version": 3}, "results/x/runs/a/r01/run.json", 1)
    text = str(raised.value)
    assert text.startswith("results/x/runs/a/r01/run.json: [schema_version] is 3")
    assert "reads run.json up to version 1" in text and "fix: upgrade agentab" in text


@pytest.mark.parametrize("version", [0, -1, "1", True, 1.0, None])
def test_a_version_that_is_not_a_positive_integer_is_refused(version):
    with pytest.raises(AgentabError, match=r"receipt.json: \[schema_version\] is .*not a version"):
        schema_version({"schema_version": version}, "receipt.json", 1)


def demo_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO_RESULTS, folder)
    return folder


def test_an_old_results_folder_without_the_key_still_reads(tmp_path, demo):
    folder = demo_copy(tmp_path)
    files = sorted(folder.glob("runs/*/r*/measures.json"))
    for index, path in enumerate(files):  # as written before the key: `schema`, or nothing
        data = json.loads(path.read_text())
        data.pop("schema_version", None)
        data.pop("schema", None)
        path.write_text(json.dumps({"schema": 1, **data} if index % 2 else data))
    runs, bad = read_runs(folder, demo)
    assert len(runs) == len(files) == 40 and bad == []


def test_the_synthesis_refuses_a_measures_json_of_a_newer_version(tmp_path, demo):
    folder = demo_copy(tmp_path)
    path = folder / "runs" / "rule-high" / "r02" / "measures.json"
    data = json.loads(path.read_text())
    data["schema_version"] = MEASURES_VERSION + 1
    path.write_text(json.dumps(data))
    with pytest.raises(AgentabError) as raised:
        read_runs(folder, demo)
    assert str(raised.value).startswith(f"{path}: [schema_version] is {MEASURES_VERSION + 1}")


def test_the_measure_step_refuses_a_run_json_of_a_newer_version(tmp_path, demo):
    record = tmp_path / "runs" / "rule-off" / "r01" / "run.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"schema_version": RUN_VERSION + 1, "outcome": {}}))
    out = record.with_name("measures.json")
    with pytest.raises(
        AgentabError, match=r"run.json: \[schema_version\] is 2: written by a newer"
    ):
        measure_run(demo, demo.cell("rule · off"), 1, record, [], [], out)
    assert not out.exists()


def test_the_report_reads_a_receipt_of_a_newer_version_as_unreadable(tmp_path):
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps({"requests": 1, "delivered": True, "bricks": []}))
    assert receipt_view(path).readable
    path.write_text(json.dumps({"schema_version": RECEIPT_VERSION + 1, "delivered": True}))
    assert not receipt_view(path).readable
