"""The harness adapter interface, and the process runner every adapter shares.

An adapter (one file under `harnesses/`) owns everything that differs between agent CLIs:

- `install(version, harnesses_dir)`: a pinned, project-local install into
  `<harnesses_dir>/<harness>/<version>/`, idempotent, with `installed.json` written last (the
  marker a workflow rule uses as its output).
- `installation(version, harnesses_dir)`: the existing install, refused (AgentabError naming
  `[agent].version`) when missing or when the binary reports another version.
- `prepare(spec, installation)`: the `Invocation` of one run: argv, the constructed environment,
  the files to write into the run's private scratch dir (agent config dir, HOME, TMPDIR) and the
  bricks to place inside the clone, each brick saying how it was passed.
- `read_stream(path)`: the raw stream the harness printed, reduced to `StreamFacts`.
- `classify(facts, exit_code, timed_out)`: an `Outcome` (`completed`, or `failed` with a
  reason: the scenario's timeout, or the agent's own error such as a provider error), or a
  `HarnessFault` when the harness could not do the run at all (crash, cannot start). A fault is
  redone; an outcome is measured.

How a process is started, timed out and cleaned up is not an adapter's business: that is
`agentab.process`, shared by every adapter and by the validators.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from agentab.errors import AgentabError


class HarnessFault(AgentabError):
    """The harness could not do the run (crash, cannot start, refused install): redo it."""


@dataclass(frozen=True)
class BrickFile:
    """A brick as the harness receives it: kind, path as written, absolute path, digest."""

    kind: str  # context_files | extensions | skills | agents
    rel: str
    path: Path
    sha256: str


@dataclass(frozen=True)
class RunSpec:
    """Everything one run of the agent depends on, and where its files go."""

    clone: Path  # the fresh clone the agent works in (its cwd)
    scratch: Path  # private, empty dir for the agent's config dir, HOME and TMPDIR
    prompt: str
    provider: str
    model: str
    thinking: str
    timeout_s: float
    bricks: tuple[BrickFile, ...] = ()
    model_base_url: str | None = None  # the offline model's URL when provider is "offline"
    api_key: str | None = None  # from the credentials file; passed in the env, never recorded


@dataclass
class Invocation:
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    files: dict[Path, str] = field(default_factory=dict)  # absolute path -> text, in scratch
    clone_files: dict[str, Path] = field(default_factory=dict)  # clone-relative path -> source
    passed_as: dict[str, str] = field(default_factory=dict)  # brick rel -> how it was passed
    secret_env: frozenset[str] = frozenset()  # names whose values run.json must not show

    def env_for_record(self) -> dict[str, str]:
        return {k: ("<secret>" if k in self.secret_env else v) for k, v in sorted(self.env.items())}


@dataclass(frozen=True)
class Installation:
    harness: str
    version: str
    root: Path  # <harnesses_dir>/<harness>/<version>
    entry: Path  # the file that starts the harness
    node: Path | None = None


@dataclass
class StreamFacts:
    turns: int = 0
    tool_calls: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(
        default_factory=lambda: {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    )
    cost_usd: float | None = None
    final_message: str = ""
    stop_reason: str = ""
    errors: list[str] = field(default_factory=list)
    settled: bool = False  # the harness said it had nothing more to do

    def as_dict(self) -> dict:
        return {
            "turns": self.turns,
            "tool_calls": dict(sorted(self.tool_calls.items())),
            "tokens": dict(self.tokens),
            "cost_usd": self.cost_usd,
            "final_message": self.final_message,
            "stop_reason": self.stop_reason,
            "errors": list(self.errors),
        }


@dataclass(frozen=True)
class Outcome:
    status: str  # completed | failed
    reason: str | None = None

    def as_dict(self) -> dict:
        return {"status": self.status, "reason": self.reason}


class Harness(ABC):
    name: str

    @abstractmethod
    def install(self, version: str, harnesses_dir: Path) -> Installation: ...

    @abstractmethod
    def installation(self, version: str, harnesses_dir: Path) -> Installation: ...

    @abstractmethod
    def prepare(self, spec: RunSpec, installation: Installation) -> Invocation: ...

    @abstractmethod
    def read_stream(self, path: Path) -> StreamFacts: ...

    @abstractmethod
    def classify(self, facts: StreamFacts, exit_code: int | None, timed_out: bool) -> Outcome: ...
