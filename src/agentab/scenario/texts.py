"""The text files a scenario names (a prompt file, a context file, an agent definition, a
rubric, a skill's SKILL.md), read at load as a run will read them.

It exists because each of them can measure nothing while looking fine: an empty prompt or
context file gives every cell of the matrix the same nothing, a skill without its front matter
is one the harness never offers, and a file that is not UTF-8 would fail every run. A UTF-8
byte-order mark, which some editors write, is dropped rather than refused.
"""

from __future__ import annotations

from pathlib import Path

from agentab.harnesses.base import front_matter
from agentab.scenario.source import BYTE_ORDER_MARK, Collector

SAVE_AS_UTF8 = "save it as UTF-8 text"
SKILL_FIELDS = ("name", "description")
SKILL_EXAMPLE = "---\\nname: run-tests\\ndescription: When to use this skill, in one line.\\n---"


def read_text(path: Path, rel: str, key: str, sink: Collector) -> str | None:
    """A file's text without its byte-order mark, or None with the problem said."""
    try:
        data = path.read_bytes()
    except OSError as error:
        sink.add(key, f"`{rel}` cannot be read: {error.strerror}", "check its permissions")
        return None
    try:
        return data.decode("utf-8").removeprefix(BYTE_ORDER_MARK)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        sink.add(
            key,
            f"`{rel}` is not UTF-8 text (byte {data[error.start]:#04x} on its line {line})",
            SAVE_AS_UTF8,
        )
        return None


def is_blank(text: str) -> bool:
    return not text.strip()


def check_prompt_text(text: str, rel: str | None, key: str, sink: Collector) -> None:
    """A task that says nothing gives every cell the same nothing to do."""
    if is_blank(text):
        where = f"`{rel}` is empty" if rel else "the prompt is empty"
        sink.add(key, f"{where}: the agent would be given no task", "write the task the agent gets")


def check_brick_text(kind: str, path: Path, rel: str, key: str, sink: Collector) -> None:
    """A context file or an agent definition that is empty, or a skill without its front
    matter: the cell would measure the absence of the brick it claims."""
    if kind in ("context_files", "agents"):
        text = read_text(path, rel, key, sink)
        if text is not None and is_blank(text):
            sink.add(
                key,
                f"`{rel}` is empty: the cell would measure the absence of the brick it names",
                "write the brick's text, or remove it from the delta",
            )
    elif kind == "skills" and (path / "SKILL.md").is_file():
        text = read_text(path / "SKILL.md", f"{rel}/SKILL.md", key, sink)
        missing = None if text is None else missing_skill_fields(text)
        if missing:
            sink.add(
                key,
                f"`{rel}/SKILL.md` has no {' and no '.join(missing)} in its front matter: a "
                "harness offers a skill by them, so this one would never be used",
                f"open SKILL.md with front matter, e.g. {SKILL_EXAMPLE}",
            )


def missing_skill_fields(text: str) -> list[str]:
    """The front-matter fields a SKILL.md lacks (a field written but left empty counts): the
    front matter every harness reads a skill's name and description from."""
    fields, _ = front_matter(text) or ({}, "")
    return [field for field in SKILL_FIELDS if not str(fields.get(field) or "").strip()]
