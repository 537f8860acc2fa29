"""A run's transcript.jsonl as a conversation a person reads: messages, and under each
assistant message its tool calls with their output (long output folded)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

TRANSCRIPT_FILE = "transcript.jsonl"
# Output longer than this is folded under <details>: a page of test logs hides the next turn.
FOLD_LINES = 12
FOLD_CHARS = 1500
# Beyond this an output is cut on the page (the raw transcript keeps it whole).
MAX_OUTPUT_CHARS = 100_000


@dataclass
class ToolOutput:
    text: str
    is_error: bool
    lines: int
    folded: bool
    cut: bool

    @classmethod
    def of(cls, text: str, is_error: bool) -> ToolOutput:
        cut = len(text) > MAX_OUTPUT_CHARS
        shown = text[:MAX_OUTPUT_CHARS] if cut else text
        lines = text.count("\n") + 1 if text else 0
        folded = lines > FOLD_LINES or len(text) > FOLD_CHARS
        return cls(shown, bool(is_error), lines, folded, cut)


@dataclass
class ToolCall:
    id: str
    tool: str
    kind: str
    shown: str  # the shell command of a `run` call, else its input as JSON
    output: ToolOutput | None = None


@dataclass
class Turn:
    role: str  # user | assistant | tool (a result no call of the transcript asked for)
    text: str
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict | None = None
    output: ToolOutput | None = None  # for role "tool" only


@dataclass
class Conversation:
    turns: list[Turn]
    problems: list[str]  # lines that could not be read

    @property
    def task(self) -> str:
        """The first user message: the task exactly as the agent got it."""
        return next((turn.text for turn in self.turns if turn.role == "user"), "")

    @property
    def final_message(self) -> str:
        texts = [turn.text for turn in self.turns if turn.role == "assistant" and turn.text]
        return texts[-1] if texts else ""


def read_conversation(run_folder: Path) -> Conversation | None:
    """The run's conversation, or None when it has no transcript.jsonl."""
    try:
        text = (Path(run_folder) / TRANSCRIPT_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return conversation_from_lines(text.splitlines())


def conversation_from_lines(lines: list[str]) -> Conversation:
    turns: list[Turn] = []
    calls: dict[str, ToolCall] = {}
    problems: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as error:
            problems.append(f"{TRANSCRIPT_FILE} line {number} is not JSON: {error}")
            continue
        if not isinstance(item, dict):
            problems.append(f"{TRANSCRIPT_FILE} line {number} is not a JSON object")
        elif item.get("type") == "message":
            turn = _message(item)
            calls.update((call.id, call) for call in turn.calls)
            turns.append(turn)
        elif item.get("type") == "tool_result":
            output = ToolOutput.of(str(item.get("output") or ""), item.get("is_error"))
            call = calls.get(str(item.get("id")))
            if call is not None and call.output is None:
                call.output = output
            else:
                turns.append(Turn("tool", str(item.get("tool") or ""), output=output))
        else:
            problems.append(f"{TRANSCRIPT_FILE} line {number} has an unknown type")
    return Conversation(turns, problems)


def _message(item: dict) -> Turn:
    usage = item.get("usage") if isinstance(item.get("usage"), dict) else None
    return Turn(
        role=str(item.get("role") or "?"),
        text=str(item.get("text") or ""),
        calls=[_call(call) for call in item.get("tool_calls") or [] if isinstance(call, dict)],
        usage=usage,
    )


def _call(call: dict) -> ToolCall:
    if call.get("command") is not None:
        shown = str(call["command"])
    else:
        shown = json.dumps(call.get("input"), indent=2, ensure_ascii=False)
    return ToolCall(
        id=str(call.get("id")),
        tool=str(call.get("tool") or "?"),
        kind=str(call.get("kind") or "other"),
        shown=shown,
    )
