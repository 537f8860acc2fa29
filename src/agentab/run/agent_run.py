"""One agent run: a fresh clone, the pinned harness in it, its stream, transcript and patch.

`perform_run` is what `python -m agentab.steps.run` does. It raises `HarnessFault` when the
harness could not do the run (the workflow redoes it), and `AgentabError` for a problem a person
must fix; otherwise the run has an outcome (completed or failed) and `run.json` is written last.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from agentab import etalon as etalon_module
from agentab.confinement.bwrap import BWRAP, NONE, View, confinement_record
from agentab.confinement.endpoint import ENDPOINT_URL, Sandbox
from agentab.confinement.views import agent_view
from agentab.errors import AgentabError, low_on_space, problem
from agentab.files import file_sha256, results_secret, write_json, write_jsonl, write_sealed_json
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
from agentab.layout import RunFolder, run_id
from agentab.offline_model import serve
from agentab.offline_model.policy import load_policy
from agentab.prices import table_price
from agentab.run.costs import run_cost
from agentab.run.credentials import read_api_key
from agentab.run.frozen_bricks import run_copies
from agentab.run.process import CannotStart, ProcessResult, end_stale_twin, run_process
from agentab.run.receipts import build_receipt, receipt_summary, stated_usage
from agentab.run.recording_proxy import (
    PLACEHOLDER_KEY,
    endpoint_for,
    recording,
    refuse_a_run_never_answered,
)
from agentab.run.setup import path_entries, run_setup
from agentab.scenario.bricks import place_in_clone

USED_MARKER = "agentab-used"  # in .git/: this clone has already had an agent in it
REJECTED_KEY_STATUSES = frozenset({401, 403})


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


@dataclass
class AgentRun:
    invocation: Invocation
    process: ProcessResult
    facts: StreamFacts
    outcome: Outcome
    started: str


def offline_seed(scenario: str, slug: str, rep: int) -> int:
    """The offline model's seed of one run: the same run always gets the same draws."""
    digest = hashlib.sha256(f"{scenario}\0{slug}\0{rep}".encode()).hexdigest()
    return int(digest[:12], 16)


def provider_api_key(provider: str, credentials: Path | None) -> str | None:
    """The provider's key from the credentials file; the offline model needs none."""
    if provider == "offline":
        return None
    return read_api_key(credentials, provider)


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


def offline_policy_source(scenario, model: str) -> str:
    """A shipped policy by name, or a policy file named relative to the scenario."""
    return str((scenario.dir / model).resolve()) if model.endswith(".toml") else model


def ensure_fresh_clone(etalon, clone: Path, mirrors_dir: Path) -> str:
    """The clone as the clone rule made it, or a new one if an earlier attempt used it."""
    marker = clone / ".git" / USED_MARKER
    if marker.exists() or not (clone / ".git").is_dir():
        sha = etalon_module.fresh_clone(etalon.location, etalon.tag, clone, mirrors_dir)
    else:
        sha = etalon_module.tag_sha(clone, etalon.tag)
    marker.write_text("an agent ran in this clone; a retry must clone again\n")
    return sha


def run_agent(
    harness: Harness,
    installation: Installation,
    spec: RunSpec,
    files: RunFiles,
    model_server,
    clone_folder: Path | None = None,
    confinement: str = BWRAP,
    path: tuple[str, ...] = (),
) -> AgentRun:
    """Run the agent once in spec.clone, every request it makes to its model recorded on the
    way by `model_server` (the offline model, or the recording proxy to a provider). Raises
    HarnessFault when the harness could not.

    `clone_folder` (the folder made for the clone, if agentab made one) is removed with the
    agent if a later attempt finds it stale. Confined (`confinement`, config/config.yaml), the
    agent sees `agent_view` and reaches its model at the sandbox's one endpoint. `path`: folders
    of the clone put first on its PATH (`[etalon] path`)."""
    files.folder.mkdir(parents=True, exist_ok=True)
    folders = [spec.scratch, *([clone_folder] if clone_folder else [])]
    with model_server as base_url:
        if confinement == NONE:
            spec = replace(spec, model_base_url=base_url)
            return _run_prepared(harness, installation, spec, files, folders, None, path)
        view = agent_view(spec.clone, spec.scratch, installation, spec.bricks)
        spec = replace(spec, model_base_url=ENDPOINT_URL, confined=True)
        sandbox = Sandbox(view, endpoint=base_url)
        return _run_prepared(harness, installation, spec, files, folders, sandbox, path)


def _run_prepared(
    harness, installation, spec: RunSpec, files: RunFiles, folders, sandbox: Sandbox | None, path
) -> AgentRun:
    if spec.scratch.exists():
        shutil.rmtree(spec.scratch)  # a retry never inherits a used config dir or HOME
    invocation = harness.prepare(spec, installation)
    if sandbox is not None:
        invocation = seen_from_inside(invocation, sandbox.view)
        harness.confined_at(Path(sandbox.view.cwd))
    if path:
        first = path_entries(path, sandbox.view.cwd if sandbox else str(spec.clone))
        invocation.env["PATH"] = ":".join([*first, invocation.env.get("PATH", "")])
    for path, text in invocation.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    place_in_clone(spec.clone, invocation.clone_files)
    started = datetime.now(UTC).isoformat(timespec="milliseconds")
    try:
        process = run_process(
            invocation.argv,
            env=invocation.env,
            cwd=invocation.cwd,
            stdout_path=files.stream,
            stderr_path=files.agent_stderr,
            timeout_s=spec.timeout_s,
            lock_path=files.lock,
            folders=folders,
            sandbox=sandbox,
        )
    except CannotStart as error:
        raise HarnessFault(str(error)) from None
    facts = harness.read_stream(files.stream)
    refuse_a_rejected_key(facts, spec.provider)
    write_jsonl(harness.transcript(files.stream), files.transcript)
    outcome = harness.classify(facts, process.exit_code, process.timed_out)
    return AgentRun(invocation, process, facts, outcome, started)


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


def record_fault(faults: Path, fault: HarnessFault) -> None:
    """Every fault is kept (the run has no measures yet): the synthesis counts them per cell."""
    line = {"at": datetime.now(UTC).isoformat(timespec="seconds"), "fault": fault.render()}
    with faults.open("a", encoding="utf-8") as log:
        log.write(json.dumps(line, ensure_ascii=False) + "\n")


def run_record(
    scenario, cell, rep: int, harness: Harness, sha: str, run: AgentRun, seed, confinement: str
) -> dict:
    agent = cell.agent
    offline = agent.provider == "offline"
    return {
        "schema": 1,
        "scenario": scenario.name,
        "cell": cell.name,
        "slug": cell.slug,
        "rep": rep,
        "run": run_id(cell.slug, rep),
        **({"task": cell.task} if getattr(cell, "task", "") else {}),
        "harness": harness.name,
        "harness_version": agent.version,
        "provider": agent.provider,
        "model": agent.model,
        "thinking": agent.thinking,
        "timeout_s": agent.timeout_s,
        "argv": run.invocation.argv,
        "env": run.invocation.env_for_record(),
        "confinement": confinement_record(confinement),
        "etalon": {"repo": scenario.etalon.repo, "tag": scenario.etalon_for(cell).tag, "sha": sha},
        "bricks": [
            {
                "kind": brick.kind,
                "rel": brick.rel,
                "sha256": brick.sha256,
                "passed_as": run.invocation.passed_as.get(brick.rel, ""),
            }
            for brick in cell.bricks
        ],
        "offline_model": {"policy": agent.model, "seed": seed} if offline else None,
        "started": run.started,
        "duration_s": round(run.process.duration_s, 3),
        "exit_code": run.process.exit_code,
        "outcome": run.outcome.as_dict(),
        "facts": run.facts.as_dict(),
    }


def run_file_hashes(folder: Path, exclude: set[str]) -> dict[str, str]:
    """The sha256 of every file the run left in its folder (its subfolders are the validators'
    and the logs', written after it)."""
    return {
        path.name: file_sha256(path)
        for path in sorted(folder.iterdir())
        if path.is_file() and path.name not in exclude and not path.name.endswith(".partial")
    }


def keep_environment(setup, path: Path) -> None:
    """The environment this run got, as its setup listed it: runs of one scenario that got
    different ones are flagged in the synthesis."""
    if setup.environment:
        path.write_text("\n".join(setup.environment) + "\n")
    else:
        path.unlink(missing_ok=True)


def perform_run(
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
    own_folder = None
    if clone is None:
        own_folder = work_root.absolute() / secrets.token_hex(10)
        clone = own_folder / etalon_module.repository_name(scenario.etalon.location)
    clone = clone.absolute()
    # An agent left running by a killed workflow still works in this clone: end it before the
    # clone is made fresh, or it could write into the new one.
    end_stale_twin(files.lock)
    set_aside_earlier_attempt(files)
    try:
        sha = ensure_fresh_clone(scenario.etalon_for(cell), clone, mirrors_dir.absolute())
    except BaseException:  # a clone that failed, or was stopped, leaves no folder behind
        if own_folder is not None:
            shutil.rmtree(own_folder, ignore_errors=True)
        raise
    provider_key = provider_api_key(cell.agent.provider, credentials)
    spec = RunSpec(
        clone=clone,
        # One scratch per attempt: a stale attempt's folders are removed by their own names
        # (by their owner, or by the next attempt, from the lock), never the agent dir or HOME
        # of the attempt after it. Beside the clone, under the attempt's random name: a sandbox
        # shows the source of every folder it binds (/proc/self/mountinfo), and the run's
        # folder is named by its cell.
        scratch=own_folder / "agent" if own_folder else files.folder / f".scratch-{os.getpid()}",
        prompt=cell.prompt,
        provider=cell.agent.provider,
        model=cell.agent.model,
        thinking=cell.agent.thinking,
        timeout_s=cell.agent.timeout_s,
        bricks=tuple(BrickFile(b.kind, b.rel, b.path, b.sha256) for b in cell.bricks),
        # The harness holds a placeholder: the recording proxy puts the key on each request.
        api_key=PLACEHOLDER_KEY if cell.agent.provider != "offline" else None,
    )
    offline = cell.agent.provider == "offline"
    seed = offline_seed(scenario.name, cell.slug, rep) if offline else None
    policy = offline_policy_source(scenario, cell.agent.model) if offline else None
    if policy is not None:
        # The model id the harness is told: the policy's name (a policy file names its model by
        # its stem), whether the model can reason, and what its tokens cost, as a real
        # catalogue would say.
        loaded = load_policy(policy)
        price = loaded.price
        spec = replace(
            spec,
            model=Path(policy).stem if policy.endswith(".toml") else policy,
            model_can_reason=bool(loaded.settings.get("reasoning", True)),
            model_price={"input": price.input, "output": price.output} if price else None,
        )
    else:
        price = table_price(cell.agent.model)
    # Every attempt, on the offline model or through the recording proxy, logs apart.
    attempt_log = new_attempt_log(files)
    if offline:
        model_server = serve(policy, seed, attempt_log)
    else:
        endpoint = endpoint_for(cell.agent.provider, provider_endpoints or {})
        model_server = recording(endpoint, attempt_log, spec.timeout_s + 60, provider_key)
    bricks_folder = (own_folder or files.folder / f".bricks-{os.getpid()}") / "bricks"
    try:
        store = RunFolder(files.folder).results.bricks
        spec = replace(spec, bricks=run_copies(spec.bricks, store, bricks_folder))
        etalon = scenario.etalon_for(cell)
        state = work_root.absolute().parent
        setup = run_setup(
            etalon, clone, files.folder / "setup.log", state / "cache", files.lock, confinement,
            environments=state / "environments",
        )  # fmt: skip
        keep_environment(setup, files.folder / "environment.txt")
        attempt_files = replace(files, model_requests=attempt_log)
        run = run_agent(
            harness,
            installation,
            spec,
            attempt_files,
            model_server,
            own_folder,
            confinement,
            etalon.path,
        )
        if not offline:
            refuse_a_run_never_answered(attempt_log, endpoint)
        # Against the SHA recorded at clone time: the agent may move or delete the tag.
        files.patch.write_bytes(etalon_module.result_patch(clone, sha))
        # While the run's copies of its bricks are there: what reached the model is their text.
        fill_unreported_usage(run.facts, attempt_log)
        run.facts.cost_usd, cost_how = run_cost(run.facts.cost_usd, run.facts.tokens, price)
        receipt = build_receipt(
            cell, spec.model, harness, run.facts, attempt_log, clone, spec.bricks
        )
    except HarnessFault as fault:
        if not low_on_space(files.folder):  # a full disk is no fault of the harness's
            record_fault(files.faults, fault)
        raise
    finally:
        shutil.rmtree(spec.scratch, ignore_errors=True)
        shutil.rmtree(bricks_folder if own_folder else bricks_folder.parent, ignore_errors=True)
        if own_folder is not None:
            shutil.rmtree(own_folder, ignore_errors=True)
    adopt_attempt_log(attempt_log, files)
    files.model_requests.touch()  # a declared output; empty when nothing was recorded
    write_json(receipt, files.receipt)
    record = run_record(scenario, cell, rep, harness, sha, run, seed, confinement)
    record["receipt"] = receipt_summary(receipt)
    record["cost"] = {"usd": run.facts.cost_usd, "how": cost_how}
    if scenario.etalon.setup:
        record["setup"] = setup.as_dict()
    # What the run left, by content: a file changed after it ended is then told apart.
    record["files"] = run_file_hashes(files.folder, exclude={files.record.name})
    secret = results_secret(RunFolder(files.folder).results.secret)
    write_sealed_json(
        record, files.record, secret
    )  # last: its presence means the run has an outcome
    return record
