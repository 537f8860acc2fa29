"""What a run leaves besides its stream: run.json's record, the hashes of its files, the
environment it got, the faults of its attempts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from agentab.confinement.bwrap import confinement_record
from agentab.harnesses.base import Harness, HarnessFault, Invocation, Outcome, StreamFacts
from agentab.layout import run_id
from agentab.run.process import ProcessResult
from agentab.runfiles import RUN_VERSION, RunJson


# What one attempt did, as `agent_run` makes it and `run_record` writes it to run.json.
@dataclass
class AgentRun:
    invocation: Invocation
    process: ProcessResult
    facts: StreamFacts
    outcome: Outcome
    started: str
    limits: dict  # declared, how each is enforced, which the run reached
    # brick rel -> every path the agent could read it at (inside its sandbox, when confined)
    bricks_seen_at: dict[str, list[str]] = field(default_factory=dict)


def record_fault(faults: Path, fault: HarnessFault) -> None:
    """Every fault is kept (the run has no measures yet): the synthesis counts them per cell."""
    line = {"at": datetime.now(UTC).isoformat(timespec="seconds"), "fault": fault.render()}
    with faults.open("a", encoding="utf-8") as log:
        log.write(json.dumps(line, ensure_ascii=False) + "\n")


def run_record(
    scenario, cell, rep: int, harness: Harness, sha: str, run: AgentRun, seed, confinement: str
) -> RunJson:
    agent = cell.agent
    offline = agent.provider == "offline"
    return {
        "schema_version": RUN_VERSION,
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
        # A declared server (`[providers.<name>]`): where it was and what the harness was told.
        **({"endpoint": agent.endpoint.as_dict()} if agent.endpoint else {}),
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
                "seen_at": run.bricks_seen_at.get(brick.rel, []),
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


def keep_environment(setup, path: Path) -> None:
    """The environment this run got, as its setup listed it: runs of one scenario that got
    different ones are flagged in the synthesis."""
    if setup.environment:
        path.write_text("\n".join(setup.environment) + "\n")
    else:
        path.unlink(missing_ok=True)
