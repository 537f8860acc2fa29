"""Script validators: the output protocol, and every way a script can fail to score a run."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from agentab.confinement.bwrap import NONE
from agentab.scenario import ValidatorSpec
from agentab.validators import ValidatorJob
from agentab.validators.script import KEPT_OUTPUT_BYTES, parse_script_output, run_script


def job(tmp_path: Path, body: str, timeout: str = "10s") -> ValidatorJob:
    script = tmp_path / "v.py"
    script.write_text(f"#!/usr/bin/env python3\n{body}")
    script.chmod(0o755)
    context = tmp_path / "context.json"
    context.write_text(json.dumps({"workdir": str(tmp_path), "changed_files": ["a.py"]}))
    audit = tmp_path / "audit"
    audit.mkdir()
    spec = ValidatorSpec(name="v", mode="script", options={"run": ["v.py"], "timeout": timeout})
    return ValidatorJob(spec, tmp_path, context, tmp_path, audit)


def test_a_script_scores_from_its_context(tmp_path: Path) -> None:
    body = (
        "import json, sys\n"
        "c = json.load(open(sys.argv[1]))\n"
        "print(json.dumps({'metrics': {'n': len(c['changed_files'])}, 'reasons': {'n': 'counted'}}))\n"
    )
    out = run_script(job(tmp_path, body))
    assert out["ok"] and out["metrics"] == {"n": 1} and out["reasons"] == {"n": "counted"}


def test_non_zero_exit_is_invalid_with_the_last_error_line(tmp_path: Path) -> None:
    out = run_script(job(tmp_path, "import sys\nsys.exit('no tests found')\n"))
    assert not out["ok"] and out["problem"] == "exit status 1: no tests found"


def test_a_hung_script_is_killed_at_its_timeout(tmp_path: Path) -> None:
    out = run_script(job(tmp_path, "import time\ntime.sleep(60)\n", timeout="1s"))
    assert not out["ok"] and out["problem"] == "timed out after 1s"


def test_the_caller_environment_does_not_reach_a_script(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AGENTAB_CANARY", "leaked")
    body = "import os, json\nprint(json.dumps({'metrics': {'seen': 'AGENTAB_CANARY' in os.environ}}))\n"
    assert run_script(job(tmp_path, body))["metrics"] == {"seen": False}


def test_output_that_is_not_the_protocol_is_invalid() -> None:
    assert "not JSON" in parse_script_output("v", "PASSED")["problem"]
    assert parse_script_output("v", '{"score": 1}')["problem"] == 'output has no "metrics" object'
    assert parse_script_output("v", '{"metrics": {}, "reasons": []}')["problem"]
    assert parse_script_output("v", '{"metrics": {"a": true}}')["ok"]


def test_a_huge_output_is_kept_bounded_and_refused(tmp_path: Path) -> None:
    body = "import sys\nsys.stdout.write('x' * (50 * 1024 * 1024))\n"
    validator = job(tmp_path, body, timeout="60s")
    out = run_script(validator)
    assert not out["ok"] and "more than" in out["problem"]
    kept = (validator.audit_dir / "stdout.txt").read_bytes()
    assert len(kept) < 1024 * 1024 and b"not kept" in kept


def test_a_validators_error_output_is_capped_as_it_is_written(tmp_path: Path) -> None:
    """40 MB on stderr never reach the host's disk: the script itself, still running, finds
    its stderr file within the cap (a cut made afterwards let it grow past the run's disk)."""
    body = (
        "import json, os, sys, time\n"
        "for _ in range(40):\n"
        "    sys.stderr.write('e' * (1024 * 1024)); sys.stderr.flush()\n"
        "time.sleep(0.5)\n"
        f"size = os.path.getsize({str(tmp_path / 'audit' / 'stderr.txt')!r})\n"
        "print(json.dumps({'metrics': {'kept': size}}))\n"
    )
    validator = replace(job(tmp_path, body, timeout="60s"), confinement=NONE)
    out = run_script(validator)
    assert out["ok"] and out["metrics"]["kept"] <= KEPT_OUTPUT_BYTES
    kept = (validator.audit_dir / "stderr.txt").read_bytes()
    assert len(kept) < KEPT_OUTPUT_BYTES + 200 and b"bytes between were not kept" in kept
