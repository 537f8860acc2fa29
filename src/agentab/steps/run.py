"""One agent run: `python -m agentab.steps.run --scenario S --cell SLUG --rep N --clone DIR
--out RUN_DIR --harnesses-dir DIR --mirrors-dir DIR`.

Writes into RUN_DIR: `stream.jsonl` (the harness's raw stream, byte for byte),
`model-requests.jsonl` (provider `offline`: every request the model received), `result.patch`
and, last, `run.json`. Exit 0 when the run has an outcome (completed or failed); exit 3 on a
fault (the harness could not do the run: no run.json, so the workflow redoes it); exit 2 on an
error a person must fix (e.g. the installed harness is not the pinned version).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from agentab.errors import AgentabError
from agentab.files import write_json, write_jsonl
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
from agentab.measures import run_id
from agentab.process import CannotStart, ProcessResult, end_stale_twin, run_process

USED_MARKER = "agentab-used"  # in .git/: this clone has already had an agent in it
FAULT_EXIT = 3


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


def run_agent(
    harness: Harness,
    installation: Installation,
    spec: RunSpec,
    run_dir: Path,
    offline_policy: str | None = None,
    seed: int = 0,
) -> AgentRun:
    """Run the agent once in spec.clone; the stream and the model's log go to run_dir.

    Raises HarnessFault when the harness could not do the run.
    """
    from agentab.offline_model import serve

    run_dir.mkdir(parents=True, exist_ok=True)
    if offline_policy is None:
        return _run_prepared(harness, installation, spec, run_dir)
    with serve(offline_policy, seed, run_dir / "model-requests.jsonl") as base_url:
        return _run_prepared(harness, installation, replace(spec, model_base_url=base_url), run_dir)


def _run_prepared(harness, installation, spec: RunSpec, run_dir: Path) -> AgentRun:
    from agentab.bricks import place_in_clone

    if spec.scratch.exists():
        shutil.rmtree(spec.scratch)  # a retry never inherits a used config dir or HOME
    invocation = harness.prepare(spec, installation)
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
            stdout_path=run_dir / "stream.jsonl",
            stderr_path=run_dir / "agent-stderr.log",
            timeout_s=spec.timeout_s,
            lock_path=run_dir / "agent.lock",
        )
    except CannotStart as error:
        raise HarnessFault(str(error)) from None
    facts = harness.read_stream(run_dir / "stream.jsonl")
    write_jsonl(harness.transcript(run_dir / "stream.jsonl"), run_dir / "transcript.jsonl")
    outcome = harness.classify(facts, process.exit_code, process.timed_out)
    return AgentRun(invocation, process, facts, outcome, started)


def ensure_fresh_clone(scenario, clone: Path, mirrors_dir: Path) -> str:
    """The clone as the clone rule made it, or a new one if an earlier attempt used it."""
    from agentab.etalon import fresh_clone, tag_sha

    marker = clone / ".git" / USED_MARKER
    if marker.exists() or not (clone / ".git").is_dir():
        sha = fresh_clone(scenario.etalon.location, scenario.etalon.tag, clone, mirrors_dir)
    else:
        sha = tag_sha(clone, scenario.etalon.tag)
    marker.write_text("an agent ran in this clone; a retry must clone again\n")
    return sha


def provider_api_key(provider: str, credentials: Path | None) -> str | None:
    """The provider's key from the credentials file; the offline model needs none."""
    if provider == "offline":
        return None
    from agentab.credentials import read_api_key

    return read_api_key(credentials, provider)


def run_record(scenario, cell, rep: int, harness: Harness, sha: str, run: AgentRun, seed) -> dict:
    agent = cell.agent
    offline = agent.provider == "offline"
    return {
        "schema": 1,
        "scenario": scenario.name,
        "cell": cell.name,
        "slug": cell.slug,
        "rep": rep,
        "run": run_id(cell.slug, rep),
        "harness": harness.name,
        "harness_version": agent.version,
        "provider": agent.provider,
        "model": agent.model,
        "thinking": agent.thinking,
        "timeout_s": agent.timeout_s,
        "argv": run.invocation.argv,
        "env": run.invocation.env_for_record(),
        "etalon": {"repo": scenario.etalon.repo, "tag": scenario.etalon.tag, "sha": sha},
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


def perform(args: argparse.Namespace) -> dict:
    from agentab.etalon import result_patch
    from agentab.scenario import load_scenario

    scenario = load_scenario(args.scenario)
    cell = scenario.cell(args.cell)
    harness = get_harness(cell.agent.harness)
    installation = harness.installation(cell.agent.version, args.harnesses_dir)
    out = args.out.absolute()
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").unlink(missing_ok=True)
    clone = args.clone.absolute()
    # An agent left running by a killed workflow still works in this clone: end it before the
    # clone is made fresh, or it could write into the new one.
    end_stale_twin(out / "agent.lock")
    sha = ensure_fresh_clone(scenario, clone, args.mirrors_dir.absolute())
    spec = RunSpec(
        clone=clone,
        # One scratch per attempt: a stale attempt left by a killed workflow cleans up its own
        # folder when its agent is ended, never the agent dir or HOME of the attempt after it.
        scratch=out / f".scratch-{os.getpid()}",
        prompt=cell.prompt,
        provider=cell.agent.provider,
        model=cell.agent.model,
        thinking=cell.agent.thinking,
        timeout_s=cell.agent.timeout_s,
        bricks=tuple(BrickFile(b.kind, b.rel, b.path, b.sha256) for b in cell.bricks),
        api_key=provider_api_key(cell.agent.provider, args.credentials),
    )
    offline = cell.agent.provider == "offline"
    seed = offline_seed(scenario.name, cell.slug, args.rep) if offline else None
    try:
        run = run_agent(
            harness, installation, spec, out, cell.agent.model if offline else None, seed
        )
    finally:
        shutil.rmtree(spec.scratch, ignore_errors=True)
    (out / "result.patch").write_bytes(result_patch(clone, scenario.etalon.tag))
    record = run_record(scenario, cell, args.rep, harness, sha, run, seed)
    write_json(record, out / "run.json")  # last: its presence means the run has an outcome
    return record


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m agentab.steps.run",
        description="Run the agent once for one cell and repetition of a scenario, on a fresh "
        "clone, and record its stream, its result patch and run.json.",
    )
    p.add_argument("--scenario", type=Path, required=True, help="the scenario TOML file")
    p.add_argument("--cell", required=True, help="the cell's name or slug")
    p.add_argument("--rep", type=int, required=True, help="the repetition number (1-based)")
    p.add_argument("--clone", type=Path, required=True, help="the run's clone of the etalon")
    p.add_argument("--out", type=Path, required=True, help="the run's folder")
    p.add_argument("--harnesses-dir", type=Path, required=True, help="pinned harness installs")
    p.add_argument("--mirrors-dir", type=Path, required=True, help="local etalon mirrors")
    p.add_argument(
        "--credentials", type=Path, help="TOML file with provider API keys ([anthropic] api_key)"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        record = perform(args)
    except HarnessFault as fault:
        print(f"fault (the run will be redone): {fault.render()}", file=sys.stderr)
        return FAULT_EXIT
    except AgentabError as error:
        print(error.render(), file=sys.stderr)
        return 2
    outcome = record["outcome"]
    print(
        f"{record['run']}: {outcome['status']}"
        + (f" ({outcome['reason']})" * bool(outcome["reason"]))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
