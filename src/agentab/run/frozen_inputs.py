"""The scenario's other inputs frozen with the results, like its bricks: offline policies,
rubrics, verdict schemas and a script validator's own files.

A policy edited in the scenario's folder used to rerun nothing, and the next runs served the new
text under the old name: results could come from two policies, and run.json named neither. So
each such input is hashed from the scenario's folder when a workflow starts (the hash is in the
params of the jobs that use it: editing one reruns exactly those), copied once into
`results/<name>/inputs/<hash>/` (when the scenario is frozen, or by the first job that has a new
one), and every job uses that copy, checked against the hash, never the file in the scenario's
folder: an edit made while jobs run reaches only the jobs the workflow reruns for it. Each
run.json (`inputs`), and each validator's output, names the hashes it used.

A script validator's own files are the folder its script sits in (the script alone when it sits
at the top of the scenario's folder): the folder its sandbox shows it (`validators/script.py`).
Its jobs rerun when a file of that folder changes that is not another validator's own (its
script, or its folder within this one): the demo's three validators share `validators/` without
one's edit rerunning the others.

A policy shipped with agentab (`model = "demo"`) is agentab's code, like a harness adapter: it is
named by its hash in run.json, and served from the package.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from agentab.harnesses.base import HarnessFault
from agentab.run.frozen_bricks import freeze_once

OFFLINE_JUDGE = "offline:"
SKIPPED = ("__pycache__",)  # made by running a script by hand: not the validator's files


@dataclass(frozen=True)
class FrozenInput:
    """One input: what it is, how the scenario names it, where its source is, its hash."""

    kind: str  # policy | rubric | schema | validator | hidden
    rel: str  # as the scenario names it (a policy's name when shipped)
    path: Path  # its source: a file or folder of the scenario's, or the package's policy
    sha256: str
    shipped: bool = False  # a policy of agentab's own: served from the package, not frozen

    def as_dict(self) -> dict:
        shown = {"kind": self.kind, "rel": self.rel, "sha256": self.sha256}
        return {**shown, "shipped": True} if self.shipped else shown


def tree_files(path: Path) -> list[Path]:
    """A folder's files as a validator gets them (caches left out); a file alone."""
    if path.is_file():
        return [path]
    return sorted(
        child
        for child in path.rglob("*")
        if child.is_file() and not any(part in SKIPPED for part in child.relative_to(path).parts)
    )


def tree_sha256(path: Path) -> str:
    """A file's hash, or a folder's: every file's relative path and bytes, in sorted order."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for child in tree_files(path):
        digest.update(child.relative_to(path).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(child.read_bytes()).digest())
    return digest.hexdigest()


def scenario_file(scenario, kind: str, rel: str) -> FrozenInput:
    path = Path(scenario.dir) / rel
    return FrozenInput(kind, rel, path, tree_sha256(path))


def policy_input(scenario, policy: str) -> FrozenInput:
    """A policy file named relative to the scenario, or a shipped policy by name."""
    if policy.endswith(".toml"):
        return scenario_file(scenario, "policy", policy)
    shipped = Path(str(resources.files("agentab.offline_model") / "policies" / f"{policy}.toml"))
    return FrozenInput("policy", policy, shipped, tree_sha256(shipped), shipped=True)


def remembered(scenario, key: tuple, make):
    """An input hashed once per loaded scenario: a step uses the hashes of the moment it loaded
    its scenario, as it uses its bricks' (an edit made later is refused as a changed input, and
    the next invocation reruns what it touches)."""
    known = scenario.__dict__.setdefault("_frozen_inputs", {})
    if key not in known:
        known[key] = make()
    return known[key]


def agent_inputs(scenario, cell) -> tuple[FrozenInput, ...]:
    """What a cell's agent runs use besides their bricks: the offline model's policy."""
    if cell.agent.provider != "offline":
        return ()
    model = cell.agent.model
    return remembered(scenario, ("policy", model), lambda: (policy_input(scenario, model),))


def script_source(scenario, spec) -> str | None:
    """The part of the scenario's folder a script validator sees: its script's folder (as the
    scenario names it), or the script alone at the top; None for a program on PATH."""
    first = spec.options["run"][0]
    script = Path(scenario.dir) / first
    if not script.is_file():
        return None
    folder = Path(first).parent
    return first if folder == Path() else folder.as_posix()


def validator_inputs(scenario, spec) -> tuple[FrozenInput, ...]:
    """What one validator uses of the scenario's folder."""
    return remembered(scenario, ("validator", spec.name), lambda: hashed_inputs(scenario, spec))


def hashed_inputs(scenario, spec) -> tuple[FrozenInput, ...]:
    if spec.mode == "judge":
        found = [
            scenario_file(scenario, "rubric", spec.options["rubric_file"]),
            scenario_file(scenario, "schema", spec.options["schema_file"]),
        ]
        model = str(spec.options.get("model", ""))
        if model.startswith(OFFLINE_JUDGE):
            found.append(policy_input(scenario, model.removeprefix(OFFLINE_JUDGE)))
        return tuple(found)
    if spec.mode == "script" and (source := script_source(scenario, spec)) is not None:
        return (scenario_file(scenario, "validator", source),)
    if spec.mode == "tests":  # its hidden tests, and every task's
        hidden = [spec.options.get("hidden")] + [task.hidden_tests for task in scenario.tasks]
        unique = dict.fromkeys(rel for rel in hidden if rel)
        return tuple(scenario_file(scenario, "hidden", rel) for rel in unique)
    return ()


def validator_files_param(scenario, spec) -> dict[str, str]:
    """rel -> sha256 of each file whose change reruns this validator's jobs: its inputs, a
    script folder's files less the other validators' scripts (they share the folder)."""
    files: dict[str, str] = {}
    for item in validator_inputs(scenario, spec):
        if item.shipped:
            continue  # agentab's own code: a new release reruns nothing
        if item.kind != "validator" or item.path.is_file():
            files[item.rel] = item.sha256
            continue
        others = other_validators_own(scenario, spec, item.path)
        for path in tree_files(item.path):
            if not any(path.resolve() == own or own in path.resolve().parents for own in others):
                rel = (Path(item.rel) / path.relative_to(item.path)).as_posix()
                files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    if spec.mode == "script" and not files:  # a program on PATH, such as `pytest`
        files[spec.options["run"][0]] = "(not a file: a command on PATH)"
    return files


def other_validators_own(scenario, spec, folder: Path) -> set[Path]:
    """What belongs to the other script validators in `folder`: their scripts, and the folders
    of their own that lie within it (`validators/slow/` beside `validators/tests.py`)."""
    own = set()
    root = folder.resolve()
    for other in scenario.validators.values():
        if other.mode != "script" or other.name == spec.name:
            continue
        script = Path(scenario.dir, other.options["run"][0]).resolve()
        own.add(script)
        if script.parent != root and root in script.parents:
            own.add(script.parent)
    return own


def scenario_inputs(scenario) -> list[FrozenInput]:
    """Every input of the scenario's own folder that its runs and validators use, once."""
    found = [item for cell in scenario.run_cells for item in agent_inputs(scenario, cell)]
    found += [
        item for spec in scenario.validators.values() for item in validator_inputs(scenario, spec)
    ]
    unique = {(item.rel, item.sha256): item for item in found if not item.shipped}
    return list(unique.values())


def frozen_copy(item: FrozenInput, store: Path) -> Path:
    """The input's frozen copy in `store` (`results/<name>/inputs`), made from its source on
    first use and checked against its hash; a shipped policy is served where it is."""
    if item.shipped:
        return item.path
    return freeze_once(
        item.path,
        item.sha256,
        store,
        copy=copy_tree,
        digest=tree_sha256,
        changed=f"{item.rel} changed since the scenario was loaded; the job is redone with it",
    )


def copy_tree(source: Path, dest: Path) -> None:
    """A file, or a folder's files as `tree_files` lists them (links followed: their content)."""
    for path in tree_files(source):
        relative = path.relative_to(source) if source.is_dir() else Path()
        target = dest / relative if source.is_dir() else dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def inputs_view(items, store: Path, view: Path) -> Path:
    """A folder laid out as the scenario's, holding only these inputs' frozen copies, each at
    the path the scenario names it by: what a validator job reads its files from. A copy of the
    copy, checked: the job owns it."""
    view.mkdir(parents=True, exist_ok=True)
    for item in items:
        if item.shipped:
            continue
        placed = view / item.rel
        copy_tree(frozen_copy(item, store), placed)
        if tree_sha256(placed) != item.sha256:
            raise HarnessFault(f"the frozen copy of {item.rel} changed; the job is redone")
    return view
