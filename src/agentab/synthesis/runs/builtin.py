"""Built-in run metrics: what every run measures by itself, without any validator
(docs/workflow.md, `builtin`).

Read from the run's record (run.json: turns, tokens, cost, duration, as the harness's stream and
the provider's replies stated them) and from its trajectory (trajectory.json: every tool call and
its result, in the same format for every harness). Kept in measures.json under `builtin`; a
scenario may name any of them in its metric contract, and a validator that returns a metric of
the same name wins.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentab.synthesis.runs.usage import run_brick_usage, usage_metrics
from agentab.trajectory.calls import calls_in, results_in

BUILTIN_METRICS = (
    "turns",
    "tool_calls",
    "tool_errors",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "duration_s",
    "protected_edits",
    "bricks_used",
    "brick_calls",
)

# How harnesses write a command's exit status into a tool's result: pi "Command exited with code
# 1", Codex "Process exited with code 1", Claude Code "Exit code 1", Gemini CLI "Exit Code: 1".
EXIT_STATUS = re.compile(r"(?:exited with code|exit code:?|exit status:?)\s*(-?\d+)", re.IGNORECASE)

# The synthesis warns about a cell where at least this share of tool calls failed: the
# environment, not the treatment, is then being measured.
FAILED_CALLS_WARNING = 0.5


def builtin_metrics(
    run: dict,
    trajectory: dict | None,
    protected: list[str] | None = None,
    bricks: Path | None = None,
) -> dict:
    """The built-in metrics of one run, from its run.json and its trajectory (ATIF, parsed; None
    when the run has no transcript); a metric the files do not tell is null.
    `protected`: the protected paths its patch changed, added or removed (`protected_paths`),
    counted as `protected_edits` (docs/validators.md, "Reward hacking"). `bricks`: the results
    folder's frozen bricks, with which the use of each brick of the run is read
    (`synthesis.usage`): `brick_usage` per brick, `bricks_used` and `brick_calls` per name."""
    facts = run.get("facts") or {}
    tokens = facts.get("tokens") or {}
    calls, errors = tool_call_counts(trajectory)
    usage = run_brick_usage(run, trajectory, bricks) if bricks is not None else []
    return {
        **usage_metrics(usage),
        "brick_usage": usage,
        "protected_edits": len(protected or []),
        "turns": facts.get("turns"),
        "tool_calls": calls,
        "tool_errors": errors,
        "input_tokens": tokens.get("input"),
        "output_tokens": tokens.get("output"),
        "cost_usd": facts.get("cost_usd"),
        "duration_s": run.get("duration_s"),
    }


def protected_paths(run: dict, protect, patch: Path | None) -> list[str]:
    """The protected paths the run's patch touches: from the files git listed when the patch
    was made (run.json), else as git reads the patch."""
    if not protect:
        return []
    from agentab.etalon import patch_files, protected_files  # late: git only when protecting

    listed = (run.get("patch") or {}).get("files")
    if not (isinstance(listed, list) and all(isinstance(path, str) for path in listed)):
        listed = patch_files(patch.read_bytes()) if patch is not None and patch.is_file() else []
    return protected_files(listed, protect)


def tool_call_counts(trajectory: dict | None) -> tuple[int | None, int | None]:
    """Tool calls, and those that failed: marked failed by the harness, or whose result reports
    a non-zero exit status, whatever the harness made of it. Unknown without a trajectory."""
    if trajectory is None:
        return None, None
    errors = sum(failed(r.result, is_command(r.call)) for r in results_in(trajectory))
    return len(calls_in(trajectory)), errors


def is_command(call: dict | None) -> bool:
    return call is not None and call.get("kind") == "run"


def failed(result: dict, is_command: bool) -> bool:
    """Marked failed, or a command whose result reports a non-zero exit status (a file that was
    read may say "exit code 1" without anything having failed)."""
    if result.get("is_error"):
        return True
    statuses = EXIT_STATUS.findall(str(result.get("output") or "")) if is_command else []
    return bool(statuses) and int(statuses[-1]) != 0
