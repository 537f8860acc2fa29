"""A run's `trajectory.json` in ATIF, the Agent Trajectory Interchange Format (v1.8, Harbor's
RFC 0001), written from its `transcript.jsonl` and `run.json`: what Harbor's viewer, Inspect
Scout's `atif` source and the `atif` package's models read.

- a user message is a `user` step; an assistant message an `agent` step with its text, its tool
  calls (`tool_call_id`, `function_name` the harness's own tool name, `arguments` its input;
  `extra.kind` the transcript's kind, and a command's text) and, as its `observation`, the
  results of those calls (`source_call_id`, `content`, `extra.is_error`); a result whose call
  no message made is a `system` step of its own (ATIF ties a result to a call of its step);
- a step's `metrics` are the tokens the harness's stream stated for that message
  (`prompt_tokens`, `completion_tokens`), where it stated them;
- `final_metrics` are run.json's totals, as every other output of agentab counts them:
  `total_prompt_tokens` is input + cache reads + cache writes (agentab's `input` counts the
  tokens read afresh), `total_cached_tokens` the cache reads, `total_completion_tokens` the
  output, `total_cost_usd` the run's cost; `extra.tokens` keeps run.json's counts as they are.

Everything the agent wrote (messages, arguments, tool output) stays a JSON string or value
under its field: nothing of it becomes a key of the structure or a step of its own. Texts are
cut to `TEXT_CHARS` characters, their start and their end (with a note of how much was cut),
arguments below `DEPTH` levels kept as their JSON text, characters that UTF-8 cannot hold
replaced.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from agentab.files import write_json
from agentab.layout import run_id
from agentab.trajectory.transcript import (
    arguments,
    count,
    is_message,
    read_transcript,
    text,
    tool_calls,
)

SCHEMA_VERSION = "ATIF-v1.8"
TEXT_CHARS = 65_536
DEPTH = 32
NOTES = (
    "Written by agentab from the run's transcript.jsonl and run.json. A step's metrics are the "
    "tokens the harness's stream stated for that message; final_metrics are run.json's totals "
    "(total_prompt_tokens = input + cache reads + cache writes)."
)
BLIND_NOTES = (
    "A validator's copy, written by agentab from the run's transcript: no harness, model, "
    "token count or cost (validators are blind to the configuration)."
)


def write_trajectory(transcript: Path, record: dict, out: Path) -> dict:
    """Write a run's trajectory.json from its transcript and its run.json (parsed)."""
    document = run_trajectory(read_transcript(transcript), record)
    write_json(document, out)
    return document


def write_blind_trajectory(transcript: Path, session: str, out: Path) -> dict:
    """Write a validator's copy: the conversation of its (blind) transcript copy, under the
    context's opaque run id, with nothing of the configuration."""
    document = {
        "schema_version": SCHEMA_VERSION,
        "session_id": session,
        "agent": {"name": "agent", "version": "unknown"},
        "steps": steps_of(read_transcript(transcript), with_metrics=False),
        "notes": BLIND_NOTES,
    }
    write_json(document, out)
    return document


def run_trajectory(lines: list[dict], record: dict) -> dict:
    """The ATIF document of one run: its transcript's `lines` and its run.json `record`."""
    steps = steps_of(lines, with_metrics=True)
    agent = {
        "name": text(record.get("harness")) or "unknown",
        "version": text(record.get("harness_version")) or "unknown",
    }
    if text(record.get("model")):
        agent["model_name"] = text(record.get("model"))
    settings = {key: record[key] for key in ("provider", "thinking") if text(record.get(key))}
    if settings:
        agent["extra"] = settings
    document = {"schema_version": SCHEMA_VERSION}
    session = session_of(record)
    if session:
        document["session_id"] = session
    document |= {
        "agent": agent,
        "steps": steps,
        "notes": NOTES,
        "final_metrics": final_metrics(record, len(steps)),
    }
    outcome = record.get("outcome") if isinstance(record.get("outcome"), dict) else {}
    extra = {"scenario": text(record.get("scenario")), "outcome": text(outcome.get("status"))}
    document["extra"] = {key: value for key, value in extra.items() if value}
    return document


def session_of(record: dict) -> str:
    slug, rep = record.get("slug"), record.get("rep")
    if isinstance(slug, str) and slug and isinstance(rep, int | str) and str(rep):
        return run_id(slug, rep)
    return ""


def steps_of(lines: list[dict], with_metrics: bool) -> list[dict]:
    steps: list[dict] = []
    made_by: dict[str, dict] = {}  # call id -> the step that made it (the latest, if reused)
    for entry in lines:
        if is_message(entry, "user"):
            steps.append({"source": "user", "message": capped(text(entry.get("text")))})
        elif is_message(entry, "assistant"):
            step = {"source": "agent", "message": capped(text(entry.get("text")))}
            calls = unique_ids([atif_call(call) for call in tool_calls(entry)])
            if calls:
                step["tool_calls"] = calls
                made_by |= {call["tool_call_id"]: step for call in calls}
            metrics = step_metrics(entry.get("usage")) if with_metrics else None
            if metrics:
                step["metrics"] = metrics
            steps.append(step)
        elif entry.get("type") == "tool_result":
            call_id = identifier(entry.get("id"))
            result = {
                "source_call_id": call_id,
                "content": capped(text(entry.get("output"))),
                "extra": {"is_error": entry.get("is_error") is True},
            }
            step = made_by.get(call_id)
            if step is None:
                del result["source_call_id"]
                result["extra"]["call_id"] = call_id
                steps.append({"source": "system", "message": "", "observation": {"results": []}})
                step = steps[-1]
            step.setdefault("observation", {"results": []})["results"].append(result)
    return [{"step_id": number, **step} for number, step in enumerate(steps, start=1)]


def atif_call(call: dict) -> dict:
    extra = {"kind": capped(text(call.get("kind")))}
    if isinstance(call.get("command"), str):
        extra["command"] = capped(call["command"])
    return {
        "tool_call_id": identifier(call.get("id")),
        "function_name": capped(text(call.get("tool"))),
        "arguments": kept(arguments(call), 0),
        "extra": extra,
    }


def unique_ids(calls: list[dict]) -> list[dict]:
    """A step's calls with an id each its own (readers refuse a step with one id twice): a
    repeated id gets `#2`, `#3`, …, and the step's results go to its first call."""
    seen: dict[str, int] = {}
    for call in calls:
        name = call["tool_call_id"]
        if name in seen:
            seen[name] += 1
            call["tool_call_id"] = f"{name}#{seen[name]}"
        else:
            seen[name] = 1
    return calls


def identifier(value) -> str:
    """A call id as text: ids are matched as strings (a number the stream gave is kept)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return ""
    return capped(str(value))


def step_metrics(usage) -> dict | None:
    if not isinstance(usage, dict):
        return None
    found = {
        "prompt_tokens": count(usage.get("input")),
        "completion_tokens": count(usage.get("output")),
    }
    found = {key: value for key, value in found.items() if value is not None}
    return found or None


def final_metrics(record: dict, steps: int) -> dict:
    facts = record.get("facts") if isinstance(record.get("facts"), dict) else {}
    tokens = facts.get("tokens") if isinstance(facts.get("tokens"), dict) else {}
    stated = {key: count(value) for key, value in tokens.items() if isinstance(key, str)}
    stated = {key: value for key, value in stated.items() if value is not None}
    metrics: dict = {"total_steps": steps}
    if "input" in stated:
        metrics["total_prompt_tokens"] = sum(
            stated.get(key, 0) for key in ("input", "cache_read", "cache_write")
        )
    if "output" in stated:
        metrics["total_completion_tokens"] = stated["output"]
    if "cache_read" in stated:
        metrics["total_cached_tokens"] = stated["cache_read"]
    cost = facts.get("cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost):
        metrics["total_cost_usd"] = float(cost)
    if stated:
        metrics["extra"] = {"tokens": stated}
    return metrics


def capped(value: str) -> str:
    """The text as data that any JSON reader takes: at most TEXT_CHARS of it, no lone surrogate.
    A longer text keeps its start and its end, where a command's output says how it exited: an
    agent cannot hide a failed command from `tool_errors` by making it print."""
    if len(value) > TEXT_CHARS:
        half = TEXT_CHARS // 2
        cut = len(value) - 2 * half
        value = f"{value[:half]}\n[agentab: {cut} characters cut]\n{value[-half:]}"
    return value.encode("utf-8", "replace").decode("utf-8")


def kept(value, depth: int):
    """A tool call's argument as a JSON value: strings capped, numbers finite, nesting bounded."""
    if isinstance(value, str):
        return capped(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth >= DEPTH:
        return capped(json.dumps(value, ensure_ascii=False, default=str))
    if isinstance(value, dict):
        return {capped(str(key)): kept(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [kept(item, depth + 1) for item in value]
    return capped(str(value))
