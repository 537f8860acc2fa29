"""The context file: what every validator of a run is handed, and nothing about the cell.

Validators are blind to the configuration: the context names no cell, no delta and no results
path. The run id is opaque (a digest), so even a validator that logs it cannot tell which
cell it scored.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from agentab.etalon import changed_files


def opaque_run_id(scenario: str, slug: str, rep: int) -> str:
    return hashlib.sha256(f"{scenario}\0{slug}\0{rep}".encode()).hexdigest()[:16]


def build_context(run_dir: Path, scenario_name: str, slug: str, rep: int, task_prompt: str) -> dict:
    """The context of one run, from its run.json, stream and patch."""
    run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    patch_path = run_dir / "result.patch"
    facts = run.get("facts") or {}
    outcome = run.get("outcome") or {}
    return {
        "run": opaque_run_id(scenario_name, slug, rep),
        "workdir": None,  # each validator's own checkout, filled in when it is made
        "task_prompt": task_prompt,
        "etalon": dict(run.get("etalon") or {}),
        "transcript": str((run_dir / "transcript.jsonl").absolute()),
        "patch": str(patch_path.absolute()),
        "changed_files": changed_files(patch_path.read_bytes()),
        "final_message": facts.get("final_message", ""),
        "exit": {
            "status": outcome.get("status"),
            "reason": outcome.get("reason"),
            "duration_s": run.get("duration_s"),
        },
        "usage": {"tokens": facts.get("tokens", {}), "cost_usd": facts.get("cost_usd")},
    }
