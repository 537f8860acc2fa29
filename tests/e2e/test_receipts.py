"""Receipts (docs/receipts.md): the worst failure of an A/B experiment as a test. A model that
cannot reason, a thinking axis: pi silently drops the level, and every run of the thinking cells
must be caught (invalid, `treatment-not-delivered`) while the others are not, and the synthesis
warns."""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.workflow import REPO, make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_thinking_level_dropped_by_the_harness_is_caught_on_every_run(tmp_path, pi_installation):
    project = make_project(tmp_path / "hazard", pi_installation.root.parents[1], repetitions=2)
    demo = project / "demo"
    policy = (REPO / "src" / "agentab" / "offline_model" / "policies" / "demo.toml").read_text()
    policy = policy.replace("[policy]\n", "[policy]\nreasoning = false\n", 1)
    (demo / "policies").mkdir()
    (demo / "policies" / "plain.toml").write_text(policy)
    scenario = demo / "scenario.toml"
    scenario.write_text(
        scenario.read_text().replace('model = "demo"', 'model = "policies/plain.toml"', 1)
    )
    result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    runs = project / "results" / "demo" / "runs"
    for cell in ("nothing-high", "rule-high", "nothing-off", "rule-off"):
        for rep in ("r01", "r02"):
            receipt = json.loads((runs / cell / rep / "receipt.json").read_text())
            measures = json.loads((runs / cell / rep / "measures.json").read_text())
            assert receipt["model"]["delivered"] is True
            if cell.endswith("high"):
                assert receipt["thinking"]["declared"] == "high"
                assert receipt["thinking"]["applied"] == "off"  # pi's own word, in its stream
                assert receipt["thinking"]["sent"] is None
                assert receipt["delivered"] is False
                assert measures["status"] == "invalid"
                assert any(p.startswith("treatment-not-delivered") for p in measures["problems"])
            else:
                assert receipt["delivered"] is True, receipt["problems"]
                assert measures["status"] != "invalid" or not any(
                    p.startswith("treatment-not-delivered") for p in measures["problems"]
                )
            if cell.startswith("rule"):
                context = next(b for b in receipt["bricks"] if b["kind"] == "context_files")
                assert context["delivered"] is True and "system prompt" in context["evidence"]
    synthesis = (project / "results" / "demo" / "synthesis.md").read_text()
    assert "## Warnings" in synthesis
    assert re.search(r"`nothing · high`: 2 runs whose treatment did not reach the model", synthesis)
    assert (
        "`nothing · high`: its requests reached the model identical to the reference's" in synthesis
    )
    assert "`rule · off`: its requests reached the model identical" not in synthesis


def test_the_demo_delivers_its_treatment_on_every_run(tmp_path, pi_installation):
    project = make_project(tmp_path / "demo", pi_installation.root.parents[1], repetitions=1)
    result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    receipts = sorted((project / "results" / "demo" / "runs").glob("*/r01/receipt.json"))
    assert len(receipts) == 4
    for path in receipts:
        receipt = json.loads(path.read_text())
        assert receipt["delivered"] is True, (path, receipt["problems"])
        assert receipt["requests"] >= 1 and receipt["fingerprint"]
    synthesis = (project / "results" / "demo" / "synthesis.md").read_text()
    assert "## Warnings" not in synthesis
