"""A results folder made consistent before the workflow decides what to run.

Snakemake never looks inside a file, and it does not rebuild a missing intermediate file under
an up-to-date target. So a per-run file that was deleted, truncated or hand-edited would stay
wrong forever while the synthesis says the run is missing. Here, when the workflow starts, each
run's files are read: one that is unreadable or fails its shape is removed together with what
depends on it (run.json → the validators' outputs → measures.json), and when a run has no
measures, the synthesis outputs are removed so that the synthesis is due again: Snakemake
then rebuilds exactly the missing chain, and nothing else.

A file found well-formed is remembered by a digest of its content (in the state folder): at
the next start it is read and hashed, and parsed and checked again only if its content changed.
Size and modification time would be cheaper and wrong: a file edited in place to the same size,
its time set back (`touch -r`, a restore from a backup), would stay trusted. Hashing a file costs
a fraction of parsing and checking it (benchmarks/bench_scale.py).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from agentab.budget.on_start import budget_on_start
from agentab.files import seal_holds
from agentab.layout import ResultsFolder, RunFolder, split_run_slug
from agentab.run.workspace import sweep_abandoned
from agentab.synthesis.runs.integrity import CHANGED_PREFIX, read_secret
from agentab.synthesis.runs.results import structure_problem
from agentab.workflow.holding import workflow_holding
from agentab.workflow.storage import refuse_unwritable_folders, stop_on_storage_error
from agentab.workflow.waves import expected_reps, repair_decisions


def _parse(text: bytes) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def content_digest(text: bytes) -> str:
    return hashlib.blake2b(text, digest_size=16).hexdigest()


UNCHANGED = object()  # what `VerifiedFiles.read` gives for a file found well-formed before


class VerifiedFiles:
    """Per-run files found well-formed at an earlier start, by a digest of their content.

    Valid for one shape of a scenario (its cells and validators: `shape`); another shape
    forgets them all, since a file's check depends on it."""

    def __init__(self, store: Path | None, shape: str):
        self.store, self.shape = store, shape
        self.known: dict[str, str] = {}
        self.trusted: dict[str, str] = {}
        self._digests: dict[str, str] = {}
        try:
            saved = json.loads(store.read_text(encoding="utf-8")) if store else {}
            if saved.get("shape") == shape and isinstance(saved.get("files"), dict):
                self.known = saved["files"]
        except (OSError, ValueError, AttributeError):
            pass  # no memory: every file is read

    def read(self, path: Path) -> tuple[bool, object, bytes]:
        """(exists, parsed JSON, None when unreadable, or UNCHANGED; the bytes read)."""
        try:
            text = path.read_bytes()
        except FileNotFoundError:
            return False, None, b""
        except OSError:
            return True, None, b""
        key, digest = str(path), content_digest(text)
        self._digests[key] = digest
        if self.known.get(key) == digest:
            return True, UNCHANGED, text
        return True, _parse(text), text

    def trust(self, path: Path) -> None:
        if (digest := self._digests.get(str(path))) is not None:
            self.trusted[str(path)] = digest

    def save(self) -> None:
        if self.store is None:
            return
        try:
            self.store.parent.mkdir(parents=True, exist_ok=True)
            partial = self.store.with_suffix(".partial")
            partial.write_text(json.dumps({"shape": self.shape, "files": self.trusted}))
            partial.replace(self.store)
        except OSError:
            pass  # the next start reads every file again: slower, never wrong


def scenario_shape(runs: list[tuple[str, str, int]], validators: list[str]) -> str:
    return hashlib.sha256(json.dumps([runs, validators]).encode()).hexdigest()[:16]


def record_problem(data: object) -> str | None:
    if not isinstance(data, dict) or not isinstance(data.get("outcome"), dict):
        return "is not a run record (no outcome)"
    return None


def validator_output_problem(data: object) -> str | None:
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        return "is not a validator's output (no ok)"
    return None


def measures_problem(
    data: object, cell: str, rep: int, cells_by_name: dict, task: str = ""
) -> str | None:
    """The synthesis's own check of a measures.json, and that it is this run's (its task too,
    in a scenario with tasks)."""
    if not isinstance(data, dict):
        return "is not a measures.json (not a JSON object)"
    if found := structure_problem(data, cells_by_name):
        return found
    if data.get("cell") != cell or data.get("rep") != rep or data.get("task", "") != task:
        task_text = f", task {data.get('task')!r}" if data.get("task") else ""
        return (
            f"belongs to another run ({data.get('cell')!r}{task_text}, repetition "
            f"{data.get('rep')!r})"
        )
    if not isinstance(data.get("metrics"), dict):
        return "has no metrics object"
    return None


@dataclass
class Repair:
    """What was found wrong in a scenario's results, and what was done about it."""

    scenario: str
    removed: list[str] = field(default_factory=list)  # "path: why"
    unmeasured: int = 0  # runs with no measures.json (after removals)
    synthesis_due: bool = False

    def lines(self, dry: bool = False) -> list[str]:
        removed = "would remove" if dry else "removed"
        lines = [f"agentab: {self.scenario}: {removed} {entry}" for entry in self.removed]
        if self.synthesis_due:
            lines.append(
                f"agentab: {self.scenario}: {self.unmeasured} runs have no measures; they "
                + ("would be redone" if dry else "are redone now")
                + ", with what depends on them"
            )
        return lines


# A job that Snakemake started deletes its outputs first; stopped there (a rerun after an
# edit, interrupted), it leaves the files built from them in place and newer than anything, and
# Snakemake would never rebuild the missing middle of the chain.
REDONE = "its job was stopped or its file removed; redone with what depends on it"


def built_without(source: Path, dependents: list[Path]) -> list[Path]:
    """The dependents that exist although the file they were built from does not."""
    if source.exists():
        return []
    return [path for path in dependents if path.exists()]


UNSEALED = "its seal does not hold: it changed after agentab wrote it"


def flagged(measures: Path, name: str) -> bool:
    """Whether measures.json already says that `name` changed after the run (then it stays)."""
    try:
        text = measures.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return any(CHANGED_PREFIX in line and name in line for line in text.splitlines())


def check_run(
    run: RunFolder,
    cell: str,
    rep: int,
    validators: list[str],
    cells_by_name: dict,
    dry: bool,
    verified: VerifiedFiles | None = None,
    secret: str | None = None,
) -> list[str]:
    """Remove this run's bad files and what depends on them; return 'path: why' for each.
    With the results folder's `secret`, a file whose seal does not hold is bad too: an edited
    measures.json is measured again from its sealed sources, and what was built from an edited
    run.json or validator output is measured again, as invalid (`synthesis/runs/integrity.py`)."""
    removed: list[str] = []
    verified = verified or VerifiedFiles(None, "")

    def problem_of(path: Path, check) -> str | None:
        exists, data, text = verified.read(path)
        if not exists:
            return None
        why = None if data is UNCHANGED else check(data) or seal_problem(text)
        if why is None:
            verified.trust(path)
        return why

    def seal_problem(text: bytes) -> str | None:
        """The seal of the bytes just read and checked: the file is not read a second time."""
        if secret is None:
            return None
        try:
            return None if seal_holds(text.decode("utf-8"), secret) else UNSEALED
        except UnicodeDecodeError:
            return "cannot be read"

    def remove(paths: list[Path], why: str, first: Path) -> None:
        removed.append(f"{first}: {why}")
        if not dry:
            for path in paths:
                path.unlink(missing_ok=True)

    downstream = [run.measures]
    outputs = [run.validator_output(v) for v in validators]
    if why := problem_of(run.record, record_problem):
        # An edited run.json is kept, as evidence: what was built from it is measured again,
        # and the run is invalid until a person redoes it.
        if why != UNSEALED:
            remove([*run.agent_outputs(), *outputs, *downstream], why, run.record)
        elif not flagged(run.measures, run.record.name):
            remove(downstream, why, run.record)
        return removed
    if orphans := built_without(run.record, [*outputs, *downstream]):
        remove(orphans, f"was built from {run.record.name}, which is gone: {REDONE}", orphans[0])
        return removed
    for output in outputs:
        if why := problem_of(output, validator_output_problem):
            if why != UNSEALED:
                remove([output, *downstream], why, output)
            elif not flagged(run.measures, f"validators/{output.name}"):
                remove(downstream, why, output)
        elif orphans := built_without(output, downstream):
            why = f"was built from validators/{output.name}, which is gone: {REDONE}"
            remove(orphans, why, orphans[0])
    if why := problem_of(
        run.measures,
        lambda data: measures_problem(
            data, cell, rep, cells_by_name, split_run_slug(run.path.parent.name)[1]
        ),
    ):
        remove([run.measures], why, run.measures)
    return removed


def repair_scenario(
    results: ResultsFolder,
    runs: list[tuple[str, str, int]],
    validators: list[str],
    dry: bool,
    verified_store: Path | None = None,
) -> Repair:
    """`runs`: (cell name, cell slug, repetition) of every expected run."""
    repair = Repair(results.path.name)
    if not results.path.is_dir():
        return repair
    cells_by_name = {cell: slug for cell, slug, _ in runs}  # names are what the check needs
    verified = VerifiedFiles(verified_store, scenario_shape(runs, validators))
    secret = read_secret(results.path)
    for cell, slug, rep in runs:
        run = results.run(slug, rep)
        if run.path.is_dir():
            repair.removed += check_run(
                run, cell, rep, validators, cells_by_name, dry, verified, secret
            )
        if not run.measures.exists() or any(
            entry.startswith(f"{run.measures}:") for entry in repair.removed
        ):
            repair.unmeasured += 1
    # Saved by a dry run too: a file is trusted for its own shape only, and a bad file upstream
    # still takes it away (the removal follows the bad file, never a read of what depends on it).
    verified.save()
    synthesis = results.output("synthesis.md")
    repair.synthesis_due = bool(repair.unmeasured) and synthesis.exists()
    if repair.synthesis_due and not dry:
        # Without its outputs the synthesis is due, and Snakemake rebuilds what it lacks
        # (`agentab synthesize` still writes a partial one by hand at any time).
        for path in results.outputs():
            path.unlink(missing_ok=True)
    return repair


def repair_workflow(workflow, dry: bool = False) -> list[str]:
    """Make every scenario's results consistent; the lines to tell the person."""
    lines = repair_decisions(workflow, dry)
    for name, scenario in workflow.scenarios.items():
        # With waves, the runs of the waves each cell was given: the others are not missing.
        expected = expected_reps(workflow, name)
        runs = [
            (cell.name, cell.slug, rep)
            for cell in scenario.run_cells
            for rep in range(1, expected[cell.name] + 1)
        ]
        repair = repair_scenario(
            workflow.layout.results(name),
            runs,
            workflow.scored_validators(name),
            dry,
            workflow.layout.verified_files(name),
        )
        lines += repair.lines(dry)
    return lines


def dry_run_asked(argv: list[str]) -> bool:
    """Whether a Snakemake command line asks for a dry run. Snakemake itself knows only after
    it has read the Snakefile, and the repair must happen before it reads any file's time."""
    for argument in argv[1:]:
        if argument in ("--dry-run", "--dryrun", "--dry", "-n"):
            return True
        if re.fullmatch(r"-[a-zA-Z]*n[a-zA-Z]*", argument):
            return True
    return False


def repair_on_start(snakemake_workflow, workflow, argv: list[str]) -> None:
    """What the workflow does as it reads its rules, in the main Snakemake process only."""
    if not snakemake_workflow.is_main_process:
        return
    dry = dry_run_asked(argv)
    if not dry:
        refuse_unwritable_folders(workflow)
    try:
        lines = budget_on_start(
            workflow, dry, workflow_holding
        )  # first: a run tried again is a run to redo
        lines += repair_workflow(workflow, dry=dry)
        if not dry:
            sweep_abandoned(workflow.layout.work)
    except OSError as error:
        stop_on_storage_error(error)
    for line in lines:
        print(line, file=sys.stderr)
