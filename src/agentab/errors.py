"""Problems a user can fix, and the one exception that carries them.

Every error agentab shows a person names the file, the key and the fix. The CLI prints
an `AgentabError` and exits 2; anything else escaping to the user is a bug.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file, said so that a person can fix it."""

    file: str
    key: str
    message: str
    fix: str = ""
    line: int | None = None

    def render(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        parts = [f"{where}:" if where else "", f"[{self.key}]" if self.key else "", self.message]
        text = " ".join(part for part in parts if part)
        return f"{text}\n  fix: {self.fix}" if self.fix else text

    def as_dict(self) -> dict:
        return {
            "file": self.file,
            "key": self.key,
            "line": self.line,
            "message": self.message,
            "fix": self.fix,
        }


class AgentabError(Exception):
    """An error caused by input a person can change; its text says how."""

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem(file="", key="", message=problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(problem.render() for problem in self.problems)


class ScenarioError(AgentabError):
    """A scenario that may not run: every problem found at load, reported together."""


def problem(
    file: Path | str, key: str, message: str, fix: str = "", line: int | None = None
) -> Problem:
    return Problem(file=str(file), key=key, message=message, fix=fix, line=line)
