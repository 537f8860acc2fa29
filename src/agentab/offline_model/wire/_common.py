"""What several wire APIs share."""

from __future__ import annotations

from agentab.offline_model.policy import Reply


def text_of(content) -> str:
    """Text of a message content: a string or a list of typed blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [text_of(block.get("text", block.get("content", ""))) for block in content]
        return "\n".join(part for part in parts if part)
    return ""


def finish_reason(reply: Reply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def objects(value) -> list[dict]:
    """The objects of a JSON list; anything else (a body is data of any shape) gives none."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def ids(values) -> set[str]:
    return {value for value in values if isinstance(value, str) and value}
