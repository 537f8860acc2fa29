"""Per-brick use in one run: did the agent use what its cell gave it (docs/synthesis.md)?

A receipt proves that a brick reached the model; it does not say that the agent used it. For
every brick of the run's cell, from its trajectory (the agent's conversation in ATIF, the same
format for every harness: `agentab.trajectory.calls`) and what the run recorded of its bricks
(run.json: where the agent could read each one, `seen_at`) with the frozen copy of each:

- a skill: loaded or not (through the harness's own skill tool, or by a read of its SKILL.md
  or of any file under it, at any path the run saw it at), at which turn first, how many of
  its files were read, and the calls that did it, by tool;
- an extension: which of the tools it declares were called, and how often;
- an agent definition: how often it was run;
- a context file, or a kind whose use the harness does not show: `used` is null, with why.

Each adapter knows how its harness loads a skill or runs an agent (`Harness.skill_tool_loads`,
`agents_called`, `extension_tools`, `unobservable_use`). Turns count the trajectory's agent
steps from 1. A trajectory is the agent's output: it is read as data.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from agentab.scenario.usage_names import USED_METRIC, brick_name
from agentab.synthesis.runs.named_paths import is_glob, named_paths
from agentab.trajectory.calls import Call, calls_in

if TYPE_CHECKING:  # the adapters are imported when a run's use is read, not by synthesize
    from agentab.harnesses.base import DeclaredTools, Harness

BRICKS_FOLDER = "/opt/bricks"  # where a confined run sees its bricks, when run.json does not say
SKILL_FILE = "SKILL.md"
NOT_GIVEN = False  # a brick of another cell: not given to this run, so not used in it


@dataclass(frozen=True)
class GivenBrick:
    """A brick of the run's cell, as its use is looked for."""

    kind: str
    rel: str
    name: str
    seen_at: tuple[str, ...]  # folders (a skill) or files the agent could read it at
    files: tuple[str, ...] = ()  # a skill's files, relative to its folder
    agent: str = ""  # the name the harness runs an agent definition by
    tools: DeclaredTools | None = None  # an extension's


@dataclass
class Use:
    first_turn: int | None = None
    calls: dict[str, int] = field(default_factory=dict)
    files_read: set[str] = field(default_factory=set)
    loaded_by: str = ""  # "skill tool" or "read"

    def note(self, turn: int, what: str) -> None:
        self.first_turn = turn if self.first_turn is None else self.first_turn
        self.calls[what] = self.calls.get(what, 0) + 1


def run_brick_usage(run: dict, trajectory: dict | None, store: Path) -> list[dict]:
    """One record per brick of the run's cell (run.json's `bricks`, in order), as kept in
    measures.json under `builtin.brick_usage`. `trajectory`: the run's, parsed (None without a
    transcript); `store`: the results folder's frozen bricks."""
    entries = [b for b in run.get("bricks") or [] if isinstance(b, dict)]
    if not entries:
        return []
    from agentab.harnesses import get_harness

    harness = get_harness(str(run.get("harness")))
    bricks = [given_brick(entry, store, harness) for entry in entries]
    uses = uses_in(calls_in(trajectory), bricks, harness)
    return [usage_record(brick, uses[brick.rel], harness) for brick in bricks]


def given_brick(entry: dict, store: Path, harness: Harness) -> GivenBrick:
    kind, rel = str(entry.get("kind")), str(entry.get("rel"))
    frozen = store / str(entry.get("sha256", ""))[:16] / PurePosixPath(rel).name
    seen = [p for p in entry.get("seen_at") or [] if isinstance(p, str)]
    seen_at = tuple(seen) or (str(PurePosixPath(BRICKS_FOLDER) / rel),)
    brick = GivenBrick(kind, rel, brick_name(kind, frozen), seen_at)
    if kind == "skills":
        files = sorted(p.relative_to(frozen).as_posix() for p in frozen.rglob("*") if p.is_file())
        return replace(brick, files=tuple(files))
    if kind == "agents":
        return replace(brick, agent=harness.agent_name(frozen))
    if kind == "extensions":
        return replace(brick, tools=harness.extension_tools(frozen))
    return brick


def uses_in(calls: list[Call], bricks: list[GivenBrick], harness: Harness) -> dict[str, Use]:
    """What the conversation did with each brick, turn by turn."""
    uses = {brick.rel: Use() for brick in bricks}
    for made in calls:
        note_call(made.call, made.result, made.turn, bricks, uses, harness)
    return uses


def note_call(call: dict, result, turn: int, bricks, uses: dict[str, Use], harness) -> None:
    tool = str(call.get("tool", ""))
    result = result if isinstance(result, dict) else None
    loaded = set(harness.skill_tool_loads(call, result))
    agents = harness.agents_called(call)
    paths = named_paths(call) if any(b.kind == "skills" for b in bricks) else set()
    for brick in bricks:
        use = uses[brick.rel]
        if brick.kind == "skills":
            if loaded & {brick.name, *(PurePosixPath(p).name for p in brick.seen_at)}:
                use.note(turn, tool)
                use.loaded_by = use.loaded_by or "skill tool"
                use.files_read |= {SKILL_FILE} & set(brick.files)  # the tool read it
            elif read := files_named(brick, paths):
                use.note(turn, tool)
                use.files_read |= read
                use.loaded_by = use.loaded_by or "read"
        elif brick.kind == "agents":
            for _ in range(list(agents).count(brick.agent)):
                use.note(turn, brick.agent)
        elif brick.kind == "extensions" and brick.tools and brick.tools.declares(tool):
            use.note(turn, tool)


def files_named(brick: GivenBrick, paths: set[str]) -> set[str]:
    """The skill's files (relative to its folder) among `paths`, at any place it was seen."""
    found = set()
    for place in brick.seen_at:
        for relative in brick.files:
            full = posixpath.join(place, relative)
            if full in paths or any(is_glob(p) and fnmatch.fnmatchcase(full, p) for p in paths):
                found.add(relative)
    return found


def usage_record(brick: GivenBrick, use: Use, harness: Harness) -> dict:
    record = {"brick": brick.name, "kind": brick.kind, "rel": brick.rel}
    why = harness.unobservable_use.get(brick.kind)
    if brick.kind == "extensions" and not brick.tools and not why:
        why = "it declares no tool the agent could call: nothing shows its use beyond delivery"
    if why:
        return record | {"used": None, "why": why}
    record |= {"used": use.first_turn is not None, "first_turn": use.first_turn}
    record["calls"] = dict(sorted(use.calls.items()))
    if brick.kind == "skills":
        record |= {"loaded_by": use.loaded_by or None, "files_read": len(use.files_read)}
        record["files"] = len(brick.files)
    if brick.kind == "extensions" and brick.tools:
        record["declares"] = brick.tools.described()
    return record


def usage_metrics(records: list[dict]) -> dict:
    """measures.json's `builtin.bricks_used` (name -> true, false, or null when not
    observable) and `builtin.brick_calls` (name -> tool or agent -> calls)."""
    used: dict = {}
    calls: dict = {}
    names = Counter(record["brick"] for record in records)
    for record in records:
        # Two bricks of one cell with one name (the load refuses it in the contract) are kept
        # under their paths rather than one over the other.
        name = record["rel"] if names[record["brick"]] > 1 else record["brick"]
        used[name] = record.get("used")
        if record.get("used") is not None:
            calls[name] = record.get("calls") or {}
    return {"bricks_used": used, "brick_calls": calls}


def builtin_value(builtin: dict, metric: str) -> tuple[object, bool]:
    """(value, known) of a built-in metric in a run's `builtin`: known with a null value when
    the run's files do not tell it. `bricks_used.<name>` of a brick this run's cell does not
    have is false: it was not given, so it was not used (the load checked the name)."""
    if not metric.startswith(USED_METRIC):
        return builtin.get(metric), metric in builtin
    used = builtin.get("bricks_used")
    if not isinstance(used, dict):
        return None, False
    name = metric.removeprefix(USED_METRIC)
    return (used[name], True) if name in used else (NOT_GIVEN, True)
