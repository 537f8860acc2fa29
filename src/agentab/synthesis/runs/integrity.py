"""Files that changed after agentab wrote them: told by their seals and their hashes.

A run's run.json lists the sha256 of every file the run left and is sealed; each validator's
output is sealed; measures.json records the sha256 of the run.json and outputs it was computed
from and is sealed (`files.py`). A run any of whose files changed after it ended is `invalid`
with a problem that starts with CHANGED_PREFIX: out of the verdicts until it is redone.

Two depths, by cost: the measure step checks the seals of what it reads; the synthesis,
`agentab runs` and the report check everything a run folder holds (`run_changes`), so that they
count every run the same way: a receipt edited after the run was measured makes it invalid in
the synthesis as in the list of runs, and the synthesis names it and how to redo it.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from pathlib import Path

from agentab.files import file_sha256, seal_holds

CHANGED_PREFIX = "changed-after-the-run"
REDO = "redo it (`agentab redo RESULTS RUN`) to measure it again"


def changed_problem(names: list[str]) -> str:
    """The problem a run gets when `names` (files of its folder) changed after agentab wrote
    them."""
    listed = ", ".join(names)
    return (
        f"{CHANGED_PREFIX}: {listed} changed after agentab wrote "
        f"{'it' if len(names) == 1 else 'them'} (no seal or hash that holds): {REDO}"
    )


def read_secret(results_dir: Path) -> str | None:
    """The results folder's secret, or None where it has none (seals are then not checked)."""
    try:
        return (Path(results_dir) / ".secret").read_text().strip() or None
    except OSError:
        return None


def unsealed(paths: list[Path], secret: str) -> list[str]:
    """The names of the files among `paths` whose seal does not hold."""
    contents = {}
    for path in paths:
        try:
            contents[Path(path)] = Path(path).read_bytes()
        except OSError:
            contents[Path(path)] = b""
    return unsealed_contents(contents, secret)


def unsealed_contents(contents: dict[Path, bytes], secret: str) -> list[str]:
    """The names of the files whose bytes (already read) carry no seal that holds."""
    broken = []
    for path, data in contents.items():
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        if not seal_holds(text, secret):
            broken.append(relative_name(path))
    return broken


def relative_name(path: Path) -> str:
    """A run file's name as its run folder sees it: `run.json`, `validators/tests.json`."""
    return f"validators/{path.name}" if path.parent.name == "validators" else path.name


def run_changes(folder: Path, secret: str | None) -> list[str]:
    """Every file of a run folder that changed after agentab wrote it: measures.json, run.json
    and the validators' outputs by their seals and by the hashes measures.json recorded, every
    other file by the hash run.json recorded. Empty for a folder whose results have no secret."""
    if secret is None or not (folder / "measures.json").exists():
        return []
    changed = unsealed([folder / "measures.json", folder / "run.json"], secret)
    outputs = sorted((folder / "validators").glob("*.json"))
    changed += unsealed(outputs, secret)
    measures, record = read_object(folder / "measures.json"), read_object(folder / "run.json")
    for name, digest in (measures.get("inputs") or {}).items():
        if name not in changed and digest_of(folder / name) != digest:
            changed.append(name)
    for name, digest in (record.get("files") or {}).items():
        if digest_of(folder / name) != digest:
            changed.append(name)
    return sorted(set(changed))


def digest_of(path: Path) -> str | None:
    try:
        return file_sha256(path)
    except OSError:
        return None


def read_object(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def with_run_changes(record, folder: Path, secret: str | None):
    """A run's record (anything with `status` and `problems`), made invalid when a file of its
    folder changed after agentab wrote it; the problem names every such file once."""
    changes = run_changes(folder, secret)
    flagged = [name for name in changes if not any(name in p for p in record.problems)]
    if not flagged:
        return record
    problems = [p for p in record.problems if not p.startswith(CHANGED_PREFIX)]
    return replace(record, status="invalid", problems=[*problems, changed_problem(changes)])


SHOWN_RUNS = 5


def changed_runs_warnings(result) -> list[str]:
    """The runs counted invalid because their files changed after agentab wrote them, named
    with the files, and the command that redoes them."""
    changed = [
        run for run in result.runs if any(p.startswith(CHANGED_PREFIX) for p in run.problems)
    ]
    if not changed:
        return []
    shown = "; ".join(
        f"`runs/{run.run}` ({changed_files(run)})" for run in changed[:SHOWN_RUNS]
    ) + (f"; and {len(changed) - SHOWN_RUNS} more" if len(changed) > SHOWN_RUNS else "")
    folder = shlex.quote(str(result.results_dir))
    runs = " ".join(shlex.quote(run.run) for run in changed)
    return [
        f"{len(changed)} run{'s' * (len(changed) != 1)} changed after agentab wrote "
        f"{'their' if len(changed) != 1 else 'its'} files, counted invalid (as `agentab runs` "
        f"lists {'them' if len(changed) != 1 else 'it'}) until redone: {shown}; redo: "
        f"`agentab redo {folder} {runs}`, then run the workflow again"
    ]


def changed_files(run) -> str:
    """The files a run's changed-after-the-run problem names."""
    for problem in run.problems:
        if problem.startswith(CHANGED_PREFIX):
            return problem.removeprefix(f"{CHANGED_PREFIX}: ").split(" changed after", 1)[0]
    return ""
