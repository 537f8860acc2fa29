"""`agentab check --validators`: each script and tests validator of a scenario run once on the
etalon as tagged, in its sandbox, before any agent run; one that breaks the output contract is
refused with its file, what it printed and the contract's page."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.workflow import REPO

pytestmark = [pytest.mark.e2e]

AGENTAB = str(Path(sys.executable).parent / "agentab")


def demo_with_scope(tmp_path: Path, script: str | None) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(REPO / "scenarios" / "demo", folder, symlinks=True)
    if script is not None:
        (folder / "validators" / "scope.py").write_text(script)
    return folder / "scenario.toml"


def check(tmp_path: Path, scenario: Path, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            AGENTAB,
            "check",
            "--validators",
            "--state",
            str(tmp_path / "state"),
            *more,
            str(scenario),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )


def test_the_demos_validators_keep_the_contract_on_the_etalon(tmp_path) -> None:
    done = check(tmp_path, demo_with_scope(tmp_path, None))
    assert done.returncode == 0, done.stderr
    assert 'validator   tests (tests) on v1.0, no agent run: {"tests_pass": false}' in done.stdout
    assert 'validator   scope (script) on v1.0, no agent run: {"scope_clean": true}' in done.stdout
    assert "4 validators and a measure per run" in done.stdout


def test_a_validator_printing_something_else_than_json_is_refused_before_any_run(tmp_path):
    scenario = demo_with_scope(tmp_path, '#!/usr/bin/env python3\nprint("all good")\n')
    done = check(tmp_path, scenario)
    assert done.returncode == 2
    assert (
        f"{scenario}:55: [validators.scope] validator `scope` (validators/scope.py)" in done.stderr
    )
    assert 'its output is not JSON {"metrics": …}: all good' in done.stderr
    assert "docs/validators.md#what-every-validator-returns" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_contract_metric_no_validator_returns_is_refused(tmp_path) -> None:
    script = '#!/usr/bin/env python3\nimport json\nprint(json.dumps({"metrics": {}}))\n'
    done = check(tmp_path, demo_with_scope(tmp_path, script), "--json")
    assert done.returncode == 2
    (found,) = json.loads(done.stdout)["problems"]
    assert found["key"] == "validation.metrics"
    assert "no validator returned `scope_clean`" in found["message"]
