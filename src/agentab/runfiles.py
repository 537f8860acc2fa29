"""The files of a run that later steps read back: run.json, receipt.json and measures.json.

One definition of each, shared by the module that writes it and every module that reads it:
the keys it may hold (a TypedDict; nested objects stay plain dicts, described in
docs/workflow.md) and its `schema_version`. A writer stamps the version of the layout it
wrote; a reader checks it first, so that a file written by a newer agentab is refused with the
fix instead of being misread. A file without the key (written before it existed, when it was
spelled `schema`) is version 1.

A reader that meets a file of an older version reads it as that version; raising a version is
a change of what a key means or holds, never a key added (an added key is read with .get).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from agentab.errors import AgentabError, problem

SCHEMA_VERSION = "schema_version"

# The version each file's writer stamps, and the newest each reader accepts.
RUN_VERSION = 1
RECEIPT_VERSION = 1
MEASURES_VERSION = 1

UPGRADE = (
    "upgrade agentab (pip install --upgrade agentab) to the version that wrote this results "
    "folder, then run the same command again"
)


class RunJson(TypedDict, total=False):
    """run.json: what the run step did (`agentab.run.record.run_record`, `agent_run`; a run the
    budget did not start, `agentab.budget.spending`)."""

    schema_version: int
    scenario: str
    cell: str
    slug: str
    rep: int
    run: str
    task: str
    harness: str
    harness_version: str
    provider: str
    model: str
    endpoint: dict
    thinking: str
    timeout_s: float
    argv: list[str]
    env: dict
    confinement: dict
    etalon: dict
    bricks: list[dict]
    offline_model: dict | None
    started: str
    duration_s: float
    exit_code: int | None
    outcome: dict
    facts: dict
    inputs: list[dict]
    receipt: dict | None
    cost: dict
    limits: dict
    patch: dict
    setup: dict
    budget: dict
    files: dict
    seal: str


class ReceiptJson(TypedDict, total=False):
    """receipt.json: whether the cell's model, thinking level and bricks reached the model
    (`agentab.run.receipts.build_receipt`; docs/receipts.md)."""

    schema_version: int
    requests: int
    tool_requests: list[dict]
    delivered: bool | None
    model: dict
    thinking: dict
    bricks: list[dict]
    fingerprint: str
    problems: list[str]


class MeasuresJson(TypedDict, total=False):
    """measures.json: the unit every table and verdict is rebuilt from
    (`agentab.synthesis.runs.measures`; read back by `agentab.synthesis.runs.results`)."""

    schema_version: int
    scenario: str
    cell: str
    rep: int
    run: str
    task: str
    status: str
    metrics: dict
    extra: dict
    reasons: dict
    problems: list[str]
    pending: list[str]
    provenance: dict
    receipt: dict | None
    builtin: dict
    protected_files: list[str]
    failed_calls: dict
    inputs: dict
    seal: str


def schema_version(data: dict, path: Path | str, newest: int) -> int:
    """The schema version of a run file's parsed object (1 when it names none). A version newer
    than `newest`, the one this agentab writes, or one that is not a positive integer, is an
    AgentabError naming the file and the fix."""
    version = data.get(SCHEMA_VERSION, 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise AgentabError(
            problem(
                path,
                SCHEMA_VERSION,
                f"is {version!r}, not a version agentab writes (a positive integer)",
                "this file was edited after agentab wrote it: redo the run "
                "(agentab redo <results folder> <run>)",
            )
        )
    if version > newest:
        raise AgentabError(
            problem(
                path,
                SCHEMA_VERSION,
                f"is {version}: written by a newer agentab than this one, which reads "
                f"{Path(path).name} up to version {newest}",
                UPGRADE,
            )
        )
    return version
