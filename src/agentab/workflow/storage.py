"""Folders the workflow writes in, checked before it decides anything.

Snakemake meets a read-only results folder with "Write-protected output files" (exit 1), or
with a traceback from the first step that writes there; a full disk shows as whatever failed
first. Here the main Snakemake process checks, as it reads the rules, that every results
folder and the state folder can be written, and stops with one sentence (exit 2: a person must
act) when one cannot; a step that meets a full disk or a read-only folder later says so too
(`agentab.steps.common`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentab.errors import (
    AgentabError,
    disk_full,
    low_on_space,
    read_only,
    storage_error,
    unwritable,
)

USER_ERROR_EXIT = 2


def folders_written(workflow) -> list[Path]:
    results = [workflow.layout.results(name).path for name in workflow.scenarios]
    return [*results, workflow.layout.state]


def storage_problem(folders: list[Path]) -> AgentabError | None:
    for folder in folders:
        if unwritable(folder):
            return read_only(folder)
        if low_on_space(folder):
            return disk_full(folder)
    return None


def refuse_unwritable_folders(workflow) -> None:
    """Stop the workflow (exit 2) when a folder it writes in is read-only or its disk full."""
    if found := storage_problem(folders_written(workflow)):
        stop_on(found)


def stop_on(error: AgentabError) -> None:
    print(f"agentab: nothing runs.\n{error.render()}", file=sys.stderr)
    raise SystemExit(USER_ERROR_EXIT)


def stop_on_storage_error(error: OSError) -> None:
    """An OSError met by the workflow's own process: the sentence, or the error itself."""
    found = storage_error(error)
    if found is None:
        raise error
    stop_on(found)
