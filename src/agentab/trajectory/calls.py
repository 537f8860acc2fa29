"""A run's tool calls as its trajectory holds them: what every built-in measure of how the agent
worked reads (`tool_calls`, `tool_errors` and the failed calls, the behaviour measures, each
brick's use).

The measures read the same document a user's scanner reads (trajectory.json,
docs/validators.md), so what agentab counts and what a reader of the field's format sees are one
conversation. A call is given back in the transcript's words (`id`, `tool`, `kind`, `input`,
`command`: `agentab.harnesses.base`), the words each adapter reads a skill's load or an agent's
run in; a result as `output` and `is_error`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Call:
    turn: int  # the agent step that made it, counting agent steps from 1
    call: dict  # {"id", "tool", "kind", "input", "command"?}
    result: dict | None  # its first result ({"output", "is_error"}), when one came back


@dataclass(frozen=True)
class Result:
    call: dict | None  # the call it answers; None for a result whose call no step made
    result: dict


def calls_in(document: dict | None) -> list[Call]:
    """Every tool call of the trajectory, in order, with the turn that made it."""
    found, turn = [], 0
    for step in steps(document):
        if step.get("source") != "agent":
            continue
        turn += 1
        answers = first_results(step)
        for call in step_calls(step):
            found.append(Call(turn, call, answers.pop(call["id"], None)))
    return found


def results_in(document: dict | None) -> list[Result]:
    """Every result of the trajectory, in order, with the call it answers."""
    found = []
    for step in steps(document):
        made = {}
        for call in step_calls(step):
            made.setdefault(call["id"], call)
        for result in observation(step):
            found.append(Result(made.get(result_id(result)), transcript_result(result)))
    return found


def turns_in(document: dict | None) -> int:
    """The agent steps of the trajectory: the assistant turns."""
    return sum(step.get("source") == "agent" for step in steps(document))


def steps(document: dict | None) -> list[dict]:
    found = (document or {}).get("steps")
    return [step for step in found if isinstance(step, dict)] if isinstance(found, list) else []


def step_calls(step: dict) -> list[dict]:
    calls = step.get("tool_calls")
    calls = calls if isinstance(calls, list) else []
    return [transcript_call(call) for call in calls if isinstance(call, dict)]


def transcript_call(call: dict) -> dict:
    extra = call.get("extra") if isinstance(call.get("extra"), dict) else {}
    found = {
        "id": str(call.get("tool_call_id") or ""),
        "tool": str(call.get("function_name") or ""),
        "kind": str(extra.get("kind") or ""),
        "input": call.get("arguments") if isinstance(call.get("arguments"), dict) else {},
    }
    if isinstance(extra.get("command"), str):
        found["command"] = extra["command"]
    return found


def observation(step: dict) -> list[dict]:
    seen = step.get("observation") if isinstance(step.get("observation"), dict) else {}
    results = seen.get("results")
    return [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []


def result_id(result: dict) -> str:
    return str(result.get("source_call_id") or "")


def transcript_result(result: dict) -> dict:
    extra = result.get("extra") if isinstance(result.get("extra"), dict) else {}
    content = result.get("content")
    return {
        "output": content if isinstance(content, str) else "",
        "is_error": extra.get("is_error") is True,
    }


def first_results(step: dict) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for result in observation(step):
        found.setdefault(result_id(result), transcript_result(result))
    return found
