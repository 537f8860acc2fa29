"""The context file: what every validator of a run is handed, and nothing about the cell.

Validators are blind to the configuration: the context names no cell, no delta, no harness
setting and no results path. The run id is opaque (a digest of the run and a secret of the
results folder), so even a validator that logs it cannot tell which cell it scored.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentab.etalon import patch_files
from agentab.layout import opaque_token


def build_context(record: dict, patch: bytes, task_prompt: str, secret: str) -> dict:
    """The context of one run from its run.json and patch; file fields are filled per
    validator, with its own copies."""
    facts = record.get("facts") or {}
    outcome = record.get("outcome") or {}
    return {
        "run": opaque_token(secret, record.get("scenario"), record.get("slug"), record.get("rep")),
        "workdir": None,
        "task_prompt": task_prompt,
        "etalon": dict(record.get("etalon") or {}),
        "transcript": None,
        "trajectory": None,  # the transcript in ATIF, blind too (agentab.trajectory)
        "patch": None,
        "changed_files": changed_files(record, patch),
        "final_message": facts.get("final_message", ""),
        # No token counts, costs or duration: the size of a brick shows in the input tokens.
        # Those are built-in metrics (synthesis/runs/builtin.py), kept beside the validators' own.
        "exit": {"status": outcome.get("status"), "reason": outcome.get("reason")},
    }


def changed_files(record: dict, patch: bytes) -> list[str]:
    """The paths the run's patch touches: as git listed them when the patch was made (run.json,
    sealed), else as git reads the patch; never by a pattern over its text (a pattern missed
    the paths git quotes, such as `test_é.py`)."""
    listed = (record.get("patch") or {}).get("files")
    if isinstance(listed, list) and all(isinstance(path, str) for path in listed):
        return list(listed)
    return patch_files(patch)


def blind_transcript(source: Path, dest: Path) -> None:
    """A validator's copy of `transcript.jsonl`: the conversation without the usage of each
    message (token counts tell a brick's size); the run's own copy keeps it for people."""
    with open(source, encoding="utf-8") as lines, open(dest, "w", encoding="utf-8") as out:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                out.write(line)
                continue
            if isinstance(entry, dict):
                entry.pop("usage", None)
            out.write(json.dumps(entry, ensure_ascii=False) + "\n")
