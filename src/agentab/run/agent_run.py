"""One agent run: a fresh clone, the pinned harness in it, its stream, transcript and patch.

`perform_run` is what `python -m agentab.steps.run` does. It raises `HarnessFault` when the
harness could not do the run (the workflow redoes it), and `AgentabError` for a problem a person
must fix; otherwise the run has an outcome (completed or failed) and `run.json` is written last.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from agentab import etalon as etalon_module
from agentab.budget.costs import run_cost, stated_usage
from agentab.confinement.bwrap import BWRAP, NONE, View
from agentab.confinement.endpoint import ENDPOINT_URL, Sandbox
from agentab.confinement.limits import Limits, RunLimits, cgroup_place, limit_reason
from agentab.confinement.views import agent_view
from agentab.errors import AgentabError, low_on_space, problem, storage_error
from agentab.etalon import PatchResult, TreeGit
from agentab.files import (
    folder_file_hashes,
    results_secret,
    write_json,
    write_jsonl,
    write_sealed_json,
)
from agentab.harnesses import get_harness
from agentab.harnesses.base import (
    BrickFile,
    Harness,
    HarnessFault,
    Installation,
    Invocation,
    Outcome,
    RunSpec,
    StreamFacts,
)
from agentab.layout import RunFolder
from agentab.offline_model import serve
from agentab.offline_model.local_server import over_bound_in
from agentab.run.frozen_bricks import run_copies
from agentab.run.frozen_inputs import agent_inputs
from agentab.run.model_choice import offline_seed, provider_api_key, provider_origin, told_model
from agentab.run.process import CannotStart, Cap, end_stale_twin, run_process
from agentab.run.receipts import build_receipt, receipt_summary
from agentab.run.record import AgentRun, keep_environment, record_fault, run_record
from agentab.run.recording_proxy import PLACEHOLDER_KEY, recording, refuse_a_run_never_answered
from agentab.run.setup import path_entries, run_setup
from agentab.run.workspace import Workspace, given_clone_workspace, run_workspace
from agentab.scenario.bricks import place_in_clone

USED_MARKER = "agentab-used"  # in .git/: this clone has already had an agent in it
REJECTED_KEY_STATUSES = frozenset({401, 403})
# The harness's stderr is for a person reading a fault: its head and tail are enough.
AGENT_STDERR_KEPT = 1 << 20


@dataclass(frozen=True)
class RunFiles:
    """Where one run writes (the workflow rule names each file)."""

    record: Path
    stream: Path
    transcript: Path
    patch: Path
    model_requests: Path
    agent_stderr: Path
    lock: Path
    earlier_attempts: Path
    faults: Path
    receipt: Path

    @property
    def folder(self) -> Path:
        return self.record.parent


def set_aside_earlier_attempt(files: RunFiles) -> None:
    """One attempt, one request log: a log a killed attempt left is kept apart, named so."""
    if files.model_requests.exists():
        files.model_requests.replace(new_attempt_log(files))


def new_attempt_log(files: RunFiles) -> Path:
    """An empty `earlier-attempts/attempt-N-model-requests.jsonl`, N the next free number.

    An attempt's request log is written there, and becomes the run's own only once the run
    has its outcome: Snakemake deletes a job's outputs before it redoes the job, so the log of
    an attempt that was killed, stopped or ended in a fault is kept apart only if it never was
    at the output's path. Created exclusively: a stale twin may be choosing its number too.
    """
    files.earlier_attempts.mkdir(parents=True, exist_ok=True)
    number = len(list(files.earlier_attempts.glob("attempt-*")))
    while True:
        number += 1
        log = files.earlier_attempts / f"attempt-{number}-{files.model_requests.name}"
        try:
            log.open("x").close()
            return log
        except FileExistsError:
            continue


def adopt_attempt_log(log: Path, files: RunFiles) -> None:
    """The run has its outcome: its attempt's log is the run's request log."""
    log.replace(files.model_requests)
    with contextlib.suppress(OSError):
        files.earlier_attempts.rmdir()  # only when no earlier attempt is kept there


def ensure_fresh_clone(etalon, clone: Path, mirrors_dir: Path) -> str:
    """A fresh clone, or the one a person made by hand (`--clone`) if no agent ran in it yet;
    either way with its controlled git directory (`etalon/tree.py`)."""
    marker = clone / ".git" / USED_MARKER
    if marker.exists() or not (clone / ".git").is_dir():
        sha = etalon_module.fresh_clone(etalon.location, etalon.tag, clone, mirrors_dir)
    else:
        sha = etalon_module.tag_sha(clone, etalon.tag)
        etalon_module.control(clone, sha, etalon.location, mirrors_dir)
    marker.write_text("an agent ran in this clone; a retry must clone again\n")
    return sha


def run_agent(
    harness: Harness,
    installation: Installation,
    spec: RunSpec,
    files: RunFiles,
    model_server,
    workspace: Workspace,
    limits: Limits,
    confinement: str = BWRAP,
    path: tuple[str, ...] = (),
) -> AgentRun:
    """Run the agent once in spec.clone, every request it makes to its model recorded on the
    way by `model_server` (the offline model, or the recording proxy to a provider), within
    the scenario's `limits`. Raises HarnessFault when the harness could not.

    The attempt's `workspace` folder is removed with the agent if a later attempt finds it
    stale. Confined (`confinement`, config/config.yaml), the agent sees `agent_view` and
    reaches its model at the sandbox's one endpoint. `path`: folders of the clone put first on
    its PATH (`[etalon] path`)."""
    files.folder.mkdir(parents=True, exist_ok=True)
    with model_server as base_url, RunLimits(limits, cgroup_place()) as run_limits:
        prepared = Prepared(workspace, run_limits)
        if confinement == NONE:
            spec = replace(spec, model_base_url=base_url)
            return _run_prepared(harness, installation, spec, files, prepared, None, path)
        view = agent_view(
            spec.clone, spec.scratch, installation, spec.bricks, workspace.tmp, limits.disk,
            harness_binary=Path(harness.command(installation)[0]),
        )  # fmt: skip
        spec = replace(spec, model_base_url=ENDPOINT_URL, confined=True)
        sandbox = Sandbox(view, endpoint=base_url)
        return _run_prepared(harness, installation, spec, files, prepared, sandbox, path)


@dataclass(frozen=True)
class Prepared:
    """Where an attempt works and what caps it."""

    workspace: Workspace
    limits: RunLimits


def _run_prepared(
    harness, installation, spec: RunSpec, files: RunFiles, prepared: Prepared, sandbox, path
) -> AgentRun:
    if spec.scratch.exists():
        shutil.rmtree(spec.scratch)  # a retry never inherits a used config dir or HOME
    invocation = harness.prepare(spec, installation)
    seen_at = bricks_seen_at(spec.bricks, invocation, sandbox.view if sandbox else None)
    seen = spec  # the run as the harness saw it: in a sandbox, its clone is the view's cwd
    if sandbox is not None:
        invocation = seen_from_inside(invocation, sandbox.view)
        seen = replace(spec, clone=Path(sandbox.view.cwd))
    if path:
        first = path_entries(path, sandbox.view.cwd if sandbox else str(spec.clone))
        invocation.env["PATH"] = ":".join([*first, invocation.env.get("PATH", "")])
    for path, text in invocation.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    place_in_clone(spec.clone, invocation.clone_files)
    started = datetime.now(UTC).isoformat(timespec="milliseconds")
    # What the run writes through agentab is bounded as it is written, by the run's disk: its
    # stream (kept byte for byte up to there), its transcript, its request log.
    disk = prepared.limits.limits.disk
    caps = (Cap(disk), Cap(AGENT_STDERR_KEPT // 2, AGENT_STDERR_KEPT // 2))
    try:
        process = run_process(
            invocation.argv,
            env=invocation.env,
            cwd=invocation.cwd,
            stdout_path=files.stream,
            stderr_path=files.agent_stderr,
            timeout_s=spec.timeout_s,
            lock_path=files.lock,
            folders=[prepared.workspace.folder],
            sandbox=sandbox,
            limits=prepared.limits,
            caps=caps,
        )
    except CannotStart as error:
        raise HarnessFault(str(error)) from None
    facts = harness.read_stream(files.stream, seen)
    refuse_a_rejected_key(facts, spec.provider)
    transcript_cut = write_jsonl(harness.transcript(files.stream, seen), files.transcript, disk)
    over = process.cut(caps)[0] or transcript_cut or over_bound_in(files.model_requests)
    reached = (
        prepared.limits.reached()
        + (["disk"] if prepared.workspace.space.full() else [])
        + (["output"] if over else [])
    )
    if reached:  # before the harness's own reading: a process the kernel ended looks a crash
        outcome = Outcome("failed", limit_reason(reached, prepared.limits.limits))
    else:
        outcome = harness.classify(facts, process.exit_code, process.timed_out)
    limits_record = {
        "declared": prepared.limits.limits.as_dict(),
        "enforced": {
            **prepared.limits.enforcement(),
            "disk": prepared.workspace.space.enforcement(),
            "patch": "agentab counts the patch's bytes as git writes it",
            "output": "agentab caps the stream, the transcript and the request log at the disk "
            "as it writes them, and refuses a request body over its bound (413) unread",
        },
        "reached": reached,
    }
    return AgentRun(invocation, process, facts, outcome, started, limits_record, seen_at)


def bricks_seen_at(bricks, invocation: Invocation, view: View | None) -> dict[str, list[str]]:
    """Where the agent could read each brick: the run's copy, and wherever the harness copied
    it (a skill in its config dir), as the sandbox shows them. A read of a brick's file is
    recognised by these paths (`agentab.synthesis.runs.usage`)."""
    inside = view.inside if view is not None else str
    return {
        brick.rel: [
            inside(str(path))
            for path in [Path(brick.path), *invocation.brick_copies.get(brick.rel, [])]
        ]
        for brick in bricks
    }


def seen_from_inside(invocation: Invocation, view: View) -> Invocation:
    """The invocation a harness prepared with the host's paths, as the sandbox shows them: its
    command line, environment, cwd and the text of the files it writes (config files name the
    clone, the scratch, the bricks). The files are still written at their host paths."""
    return replace(
        invocation,
        argv=[view.inside(arg) for arg in invocation.argv],
        env={name: view.inside(value) for name, value in invocation.env.items()},
        cwd=Path(view.inside(str(invocation.cwd))),
        files={path: view.inside(text) for path, text in invocation.files.items()},
    )


def refuse_a_rejected_key(facts: StreamFacts, provider: str) -> None:
    """A key the provider refuses is refused on every retry: a person must fix it (exit 2),
    whatever the harness would make of it (a failed run, or a fault retried forever)."""
    if facts.error_status in REJECTED_KEY_STATUSES:
        raise AgentabError(
            problem(
                "the credentials file (config/config.yaml: credentials)",
                f"{provider}.api_key",
                f"{provider} refused the key (HTTP {facts.error_status}): "
                f"{(facts.errors or [''])[-1][:300]}",
                f"put a valid {provider} key in [{provider}] api_key, then run the workflow again",
            )
        )


def fill_unreported_usage(facts: StreamFacts, log: Path) -> None:
    """Tokens and cost as the provider replied them, where the harness's stream did not say."""
    stated = stated_usage(log)
    if not any(facts.tokens.values()):
        facts.tokens.update({k: v for k, v in stated.items() if k in facts.tokens})
    if facts.cost_usd is None and "cost_usd" in stated:
        facts.cost_usd = stated["cost_usd"]


def perform_run(scenario, cell, rep: int, *, files: RunFiles, **how) -> dict:
    """`run_once`, and any crash of agentab's own on the way (something the run produced that
    it could not handle, a bug) kept as a fault: the attempt is recorded in faults.jsonl, the
    step exits as on a fault, the run is redone; never a traceback that leaves no trace."""
    try:
        return run_once(scenario, cell, rep, files=files, **how)
    except AgentabError:  # a fault already recorded, or a problem a person must fix
        raise
    except Exception as crash:
        if isinstance(crash, OSError) and storage_error(crash) is not None:
            raise  # a full or read-only disk: the step says so, no fault of the run's
        # The message may quote the run's bytes (a name that is not UTF-8): escaped, as text.
        said = str(crash)[:300].encode("utf-8", "backslashreplace").decode("utf-8")
        fault = HarnessFault(
            f"agentab could not do the run: {type(crash).__name__}: {said} (a bug of "
            "agentab's: report it with this run's folder)"
        )
        if not low_on_space(files.folder):
            record_fault(files.faults, fault)
        raise fault from crash


def run_once(
    scenario,
    cell,
    rep: int,
    *,
    files: RunFiles,
    work_root: Path,
    harnesses_dir: Path,
    mirrors_dir: Path,
    credentials: Path | None = None,
    clone: Path | None = None,
    provider_endpoints: dict[str, str] | None = None,
    confinement: str = BWRAP,
) -> dict:
    """Run the agent for one cell and repetition; write the run's files, run.json last.

    The agent works in a fresh clone under `work_root`, in a folder with a random name, so that
    no path the agent (or its model, which is told its working directory) sees names the cell.
    `clone` puts it elsewhere instead (a person running the step by hand). A real provider is
    reached at its endpoint in `provider_endpoints`, else its own, through a recording proxy.
    """
    harness = get_harness(cell.agent.harness)
    installation = harness.installation(cell.agent.version, harnesses_dir)
    files.folder.mkdir(parents=True, exist_ok=True)
    files.record.unlink(missing_ok=True)
    # An agent left running by a killed workflow still works in its clone: end it (and remove
    # its folders) before this attempt starts.
    end_stale_twin(files.lock)
    set_aside_earlier_attempt(files)
    limits = scenario.limits
    if clone is None:
        repository = etalon_module.repository_name(scenario.etalon.location)
        workspace = run_workspace(work_root, repository, limits.disk)
    else:
        workspace = given_clone_workspace(clone, files.folder)
    with workspace as space:
        made = run_in_workspace(
            scenario, cell, rep, files, space, harness, installation,
            AttemptSettings(work_root, mirrors_dir, credentials, provider_endpoints, confinement),
        )  # fmt: skip
    run, receipt, setup, sha = made.run, made.receipt, made.setup, made.sha
    adopt_attempt_log(made.request_log, files)
    files.model_requests.touch()  # a declared output; empty when nothing was recorded
    write_json(receipt, files.receipt)
    record = run_record(scenario, cell, rep, harness, sha, run, made.seed, confinement)
    record["inputs"] = [item.as_dict() for item in made.inputs]  # the policy it was served
    record["receipt"] = receipt_summary(receipt)
    record["cost"] = {"usd": run.facts.cost_usd, "how": made.cost_how}
    record["limits"] = run.limits
    patch = made.patch
    # The names as git gave them (the validators protect by them): a byte that is not UTF-8
    # is written as a \udcXX escape that reads back the same (files.escaped_surrogates).
    record["patch"] = {"bytes": patch.size, "kept": not patch.over_cap, "files": patch.files}
    if scenario.etalon.setup:
        record["setup"] = setup.as_dict()
    # What the run left, by content: a file changed after it ended is then told apart.
    record["files"] = folder_file_hashes(files.folder, exclude={files.record.name})
    secret = results_secret(RunFolder(files.folder).results.secret)
    # Last: its presence means the run has an outcome.
    write_sealed_json(record, files.record, secret)
    return record


@dataclass(frozen=True)
class AttemptSettings:
    """What the workflow tells a run step about this machine (none of it is measured)."""

    work_root: Path
    mirrors_dir: Path
    credentials: Path | None
    provider_endpoints: dict[str, str] | None
    confinement: str


def run_in_workspace(scenario, cell, rep, files, space: Workspace, harness, installation, how):
    etalon = scenario.etalon_for(cell)
    sha = ensure_fresh_clone(etalon, space.clone, how.mirrors_dir.absolute())
    provider_key = provider_api_key(cell.agent, how.credentials)
    spec = RunSpec(
        clone=space.clone,
        # One scratch per attempt, in the attempt's folder of random name: a sandbox shows the
        # source of every folder it binds (/proc/self/mountinfo), and the run's folder is named
        # by its cell.
        scratch=space.scratch,
        prompt=cell.prompt,
        provider=cell.agent.provider,
        model=cell.agent.model,
        thinking=cell.agent.thinking,
        timeout_s=cell.agent.timeout_s,
        bricks=tuple(BrickFile(b.kind, b.rel, b.path, b.sha256) for b in cell.bricks),
        # The harness holds a placeholder: the recording proxy puts the key on each request.
        api_key=PLACEHOLDER_KEY if provider_key else None,
        endpoint=cell.agent.endpoint,
    )
    offline = cell.agent.provider == "offline"
    seed = offline_seed(scenario.name, cell.slug, rep) if offline else None
    inputs = agent_inputs(scenario, cell)
    spec, price, policy = told_model(cell, spec, inputs, RunFolder(files.folder).results.inputs)
    # Every attempt, on the offline model or through the recording proxy, logs apart.
    attempt_log = new_attempt_log(files)
    if offline:
        model_server = serve(
            policy, seed, attempt_log, log_cap=scenario.limits.disk, harness=harness.name
        )
    else:
        endpoint = provider_origin(cell.agent, how.provider_endpoints or {})
        model_server = recording(
            endpoint, attempt_log, spec.timeout_s + 60, provider_key, scenario.limits.disk
        )
    try:
        store = RunFolder(files.folder).results.bricks
        spec = replace(spec, bricks=run_copies(spec.bricks, store, space.bricks))
        state = how.work_root.absolute().parent
        setup = run_setup(
            etalon, space.clone, files.folder / "setup.log", state / "cache", files.lock,
            how.confinement, environments=state / "environments",
        )  # fmt: skip
        keep_environment(setup, files.folder / "environment.txt")
        attempt_files = replace(files, model_requests=attempt_log)
        run = run_agent(
            harness, installation, spec, attempt_files, model_server, space, scenario.limits,
            how.confinement, etalon.path,
        )  # fmt: skip
        if not offline:
            refuse_a_run_never_answered(attempt_log, endpoint)
        patch = keep_patch(space.clone, files.patch, run, scenario.limits)
        # While the run's copies of its bricks are there: what reached the model is their text.
        fill_unreported_usage(run.facts, attempt_log)
        run.facts.cost_usd, cost_how = run_cost(run.facts.cost_usd, run.facts.tokens, price)
        receipt = build_receipt(
            cell, spec.model, harness, run.facts, attempt_log, space.clone, spec.bricks
        )
    except HarnessFault as fault:
        if not low_on_space(files.folder):  # a full disk is no fault of the harness's
            record_fault(files.faults, fault)
        raise
    return Made(run, receipt, setup, sha, seed, cost_how, patch, attempt_log, inputs)


@dataclass(frozen=True)
class Made:
    """What one attempt made, for run.json and the run's files."""

    run: AgentRun
    receipt: dict
    setup: object
    sha: str
    seed: int | None
    cost_how: str
    patch: PatchResult
    request_log: Path
    inputs: tuple  # what it used besides its bricks (`frozen_inputs.agent_inputs`)


def keep_patch(clone: Path, patch_file: Path, run: AgentRun, limits: Limits) -> PatchResult:
    """`result.patch`: the agent's work against the etalon commit recorded at clone time (the
    agent may move or delete the tag), built through the clone's controlled git directory
    (nothing the agent wrote in its `.git` runs). Over its cap it is not kept, and the run's
    outcome says so; with the disk full, git may have no room left to build it."""
    try:
        patch = TreeGit(clone).patch(limits.patch)
    except AgentabError:
        if "disk" not in run.limits["reached"]:
            raise
        patch = PatchResult(None, 0, [])
    patch_file.write_bytes(patch.patch or b"")
    if patch.over_cap and patch.size:
        reached = [*run.limits["reached"], "patch"]
        run.limits["reached"] = reached
        run.outcome = Outcome("failed", limit_reason(reached, limits, patch.size))
    return patch
