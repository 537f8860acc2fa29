"""A results folder held by the workflow that writes in it, so that nothing deletes its runs
in flight (`agentab redo`).

Snakemake's own lock (`.snakemake/locks/`) is no answer: it lives in the working directory of
the invocation, not beside the results (two working directories can share one `results:`), it
names files rather than a process, and a killed invocation leaves it behind until `--unlock`,
so its presence says nothing about a live workflow. Here the main Snakemake process takes an
advisory lock (`flock`) on `results/<scenario>/.workflow.lock` when it starts its jobs and holds
it until it exits. The kernel releases it when that process ends, however it ends (`kill -9`
included): a lock is never stale, and no one ever removes it by hand. The file also names the
holder's pid, for the message. The lock is opened close-on-exec, so no job inherits it.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.layout import ResultsFolder

_HELD: list[int] = []  # the descriptors this process holds, until it exits


def hold_results_folder(results: ResultsFolder) -> None:
    """Take the folder's lock, shared (several invocations may run different targets), for the
    life of this process."""
    results.path.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(results.workflow_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    fcntl.flock(descriptor, fcntl.LOCK_SH)
    _HELD.append(descriptor)
    holders = read_holders(results.workflow_lock) | {os.getpid()}
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, json.dumps({"pids": sorted(holders)}).encode(), 0)


def hold_results_folders(workflow) -> None:
    """From the Snakefile's `onstart:`: every scenario's results folder, held until exit."""
    for name in workflow.scenarios:
        hold_results_folder(workflow.layout.results(name))


def read_holders(lock: Path) -> set[int]:
    try:
        pids = json.loads(lock.read_text(encoding="utf-8")).get("pids", [])
    except (OSError, ValueError, AttributeError):
        return set()
    return {pid for pid in pids if isinstance(pid, int) and Path(f"/proc/{pid}").exists()}


def workflow_holding(results_dir: Path) -> set[int] | None:
    """The pids of the workflows holding the folder (an empty set if it cannot tell which),
    or None when none does."""
    lock = ResultsFolder(Path(results_dir)).workflow_lock
    try:
        # Read-write where it can: over NFS an exclusive flock needs a descriptor open for writing.
        descriptor = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    except PermissionError:
        descriptor = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None  # never held: no workflow has started jobs on it
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_holders(lock)
    finally:
        os.close(descriptor)  # releases the lock, if it was taken
    return None


def refuse_while_held(results_dir: Path, action: str) -> None:
    """An AgentabError when a workflow holds the folder: `action` would pull files from under
    its jobs."""
    holders = workflow_holding(results_dir)
    if holders is None:
        return
    who = f" (snakemake, pid {', '.join(map(str, sorted(holders)))})" if holders else ""
    raise AgentabError(
        problem(
            results_dir,
            "",
            f"a workflow is running on this folder{who}; {action} now would delete runs it "
            "is doing",
            "wait for it to end (or stop it: Ctrl-C, or `kill PID`), then run the same "
            "command again",
        )
    )
