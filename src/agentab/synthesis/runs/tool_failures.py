"""Which of a run's tool calls failed, by what they did: the commands behind `tool_errors`.

A cell whose agent saw half its tool calls fail is measuring its environment (a missing
interpreter, test runner or dependency), not its treatment; the synthesis says so, and a person
acts on it faster when it names what failed (`python3 -m pytest` 6 times) than on a count. The
measure step keeps, per run, each failed call's label and how often it failed
(`measures.json` → `failed_calls`); the synthesis adds them up per cell.

The trajectory is the agent's: every label is its text, read as data, whitespace squeezed and
cut short, and shown in the synthesis as a quoted code span.
"""

from __future__ import annotations

from collections import Counter

from agentab.synthesis.runs.builtin import failed, is_command
from agentab.trajectory.calls import results_in

LABEL_CHARS = 60
PATH_KEYS = ("path", "file_path", "absolute_path", "filePath", "file")
SHOWN_LABELS = 3


def failed_calls(trajectory: dict | None) -> dict[str, int]:
    """label -> how many of the run's calls with that label failed (as `tool_errors` counts
    them: marked failed by the harness, or a command whose result reports a non-zero exit)."""
    found: Counter = Counter()
    for answer in results_in(trajectory):
        if failed(answer.result, is_command(answer.call)):
            found[call_label(answer.call) if answer.call else "a result without its call"] += 1
    return dict(sorted(found.items()))


def call_label(call: dict) -> str:
    """A command as the agent wrote it; another tool by its name and the file it named."""
    given = call.get("input") if isinstance(call.get("input"), dict) else {}
    if call.get("kind") == "run":
        text = call.get("command") or given.get("command") or call.get("tool") or "a command"
    else:
        path = next((given[key] for key in PATH_KEYS if isinstance(given.get(key), str)), "")
        text = f"{call.get('tool') or call.get('kind') or 'a tool'} {path}"
    return shortened(str(text))


def shortened(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def most_failed(runs) -> str:
    """`python3 -m pytest` (6), `edit calc.py` (2): the labels that failed most over `runs`
    (their `failed_calls`), most first; "" when none was kept."""
    total: Counter = Counter()
    for run in runs:
        for label, count in (getattr(run, "failed_calls", None) or {}).items():
            if isinstance(count, int) and not isinstance(count, bool):
                total[str(label)] += count
    ranked = sorted(total.items(), key=lambda item: (-item[1], item[0]))[:SHOWN_LABELS]
    return ", ".join(f"{code_span(label)} ({count})" for label, count in ranked)


def code_span(text: str) -> str:
    """The agent's text as a Markdown code span it cannot close."""
    return "`" + shortened(text).replace("`", "'") + "`"
