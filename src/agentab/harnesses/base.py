"""The harness adapter interface, and the process runner every adapter shares.

An adapter (one file under `harnesses/`) owns everything that differs between agent CLIs:

- `installer`: how the harness comes onto the machine, an `Installer` the adapter declares
  (`npm.NpmPackage(package, bin_name)` for a harness on the npm registry). Through it,
  `install(version, harnesses_dir)` makes a pinned, project-local install into
  `<harnesses_dir>/<harness>/<version>/`, idempotent, with `installed.json` written last (the
  marker a workflow rule uses as its output), and `installation(version, harnesses_dir)` finds
  the existing install, refused (AgentabError naming `[agent].version`) when missing or when
  it holds another version. Running is the adapter's: `command(installation)` starts what was
  installed (the installer's way by default).
- `prepare(spec, installation)`: the `Invocation` of one run: argv, the constructed environment,
  the files to write into the run's private scratch dir (agent config dir, HOME, TMPDIR) and the
  bricks to place inside the clone, each brick saying how it was passed.
- `read_stream(path, spec)`: the raw stream the harness printed, reduced to `StreamFacts`.
- `transcript(path, spec)`: the conversation from the raw stream, in the harness-neutral format
  of `transcript.jsonl` (below): what validators read, without the harness's configuration
  records. `spec` is the run as the harness saw it (its clone where a sandbox showed it): the
  run's state is an argument, never left on the adapter, so one adapter serves many runs.
  Without it (a stream read on its own) what only the run knows is left out.
- `sent_thinking(level, model, provider)`: the reasoning setting a model request carries when
  this harness is told `level` (the adapter's documented mapping), as the wire modules of the
  offline model read it (`Conversation.thinking`): what a receipt compares the request log with.
  `ANY_REASONING` when the harness maps the level per model from a catalogue of its own: then
  the receipt checks that a setting was sent, not which.
- what a tool call of its transcript does with the bricks it was given (`agentab.synthesis.
  usage` reads every run's transcript with them): `skill_tool_loads(call, result)` (the skills
  its own skill tool loaded), `agents_called(call)` (the agent definitions a call ran),
  `extension_tools(path)` (the tools an extension declares, as the model calls them) and
  `unobservable_use` (the brick kinds whose use no run shows, and why). A read of a brick's
  file needs no adapter: the paths a call names are compared with where the run saw its bricks.
- `classify(facts, exit_code, timed_out)`: an `Outcome` (`completed`, or `failed` with a
  reason: the scenario's timeout, or the agent's own error such as a provider error), or a
  `HarnessFault` when the harness could not do the run at all (crash, cannot start). A fault is
  redone; an outcome is measured.

How a process is started, timed out and cleaned up is not an adapter's business: that is
`agentab.run.process`, shared by every adapter and by the validators.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

import yaml

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
    # Where the harness sends its model requests: the offline model when provider is "offline",
    # else the run's recording proxy, which forwards to the provider and records what it sent,
    # the receipt's evidence (docs/receipts.md).
    model_base_url: str | None = None
    api_key: str | None = None  # from the credentials file; passed in the env, never recorded
    model_can_reason: bool = True  # what the offline model's policy says of its model
    # What the offline model's policy says its tokens cost (USD per million, `input` and
    # `output`); None: it costs nothing. A harness that prices tokens itself is told so.
    model_price: dict[str, float] | None = None
    confined: bool = False  # the run is in agentab's sandbox: a harness's own may stand down
    # A provider the scenario declares (`[providers.<name>]`: a scenario.providers
    # DeclaredProvider, untyped here since harnesses sit below the scenario): its catalogue
    # entry is agentab's to write, as the offline model's is.
    endpoint: object | None = None


@dataclass
class Invocation:
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    files: dict[Path, str] = field(default_factory=dict)  # absolute path -> text, in scratch
    clone_files: dict[str, Path] = field(default_factory=dict)  # clone-relative path -> source
    passed_as: dict[str, str] = field(default_factory=dict)  # brick rel -> how it was passed
    # brick rel -> where else the harness reads it (a copy in its config dir): the run records
    # every place the agent sees a brick, so that a read of its files is recognised there too.
    brick_copies: dict[str, list[Path]] = field(default_factory=dict)
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


THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")

# transcript.jsonl, one JSON object a line, in conversation order:
#   {"type": "message", "role": "user" | "assistant", "text": str,
#    "tool_calls": [{"id": str, "tool": str, "kind": KIND, "input": {...}, "command": str?}],
#    "usage": {"input": int, "output": int}?}
#   {"type": "tool_result", "id": str, "tool": str, "output": str, "is_error": bool}
# `tool` is the harness's own tool name; `kind` is one of TOOL_KINDS, so that a validator reads
# any harness alike; a `run` call also carries its shell `command`. No system prompt, no brick
# text, no model or thinking setting, no path of the clone: a validator must not be able to tell
# the cell (docs/validators.md).
TOOL_KINDS = ("read", "edit", "write", "run", "other")


def transcript_message(role: str, text: str, tool_calls=(), usage: dict | None = None) -> dict:
    line: dict = {"type": "message", "role": role, "text": text, "tool_calls": list(tool_calls)}
    if usage is not None:
        line["usage"] = usage
    return line


def transcript_call(call_id: str, tool: str, kind: str, arguments: dict, command=None) -> dict:
    call = {"id": call_id, "tool": tool, "kind": kind, "input": arguments}
    if command is not None:
        call["command"] = str(command)
    return call


def transcript_result(call_id: str, tool: str, output: str, is_error: bool) -> dict:
    return {
        "type": "tool_result",
        "id": call_id,
        "tool": tool,
        "output": output,
        "is_error": is_error,
    }


def stream_events(path: Path):
    """The JSON objects of a harness's raw stream, one a line; a line that is not one is skipped."""
    for line in path.read_bytes().split(b"\n"):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            yield event


def stream_facts_events(path: Path, errors: list[str]):
    """The JSON objects of a harness's raw stream with their line numbers, for its facts: a line
    that is not one is noted in `errors` (a stream agentab cannot read whole is not clean)."""
    for number, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            event = None
        if isinstance(event, dict):
            yield number, event
        else:
            errors.append(f"stream line {number} is not JSON")


# What `sent_thinking` answers when any reasoning setting is right (see the module's docstring).
ANY_REASONING = "any reasoning setting"


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
    thinking_applied: str | None = None  # the level the harness says it used, when it says so
    error_status: int | None = None  # the provider's HTTP status of the last error, when known

    def as_dict(self) -> dict:
        return {
            "turns": self.turns,
            "tool_calls": dict(sorted(self.tool_calls.items())),
            "tokens": dict(self.tokens),
            "cost_usd": self.cost_usd,
            "final_message": self.final_message,
            "stop_reason": self.stop_reason,
            "errors": list(self.errors),
            "thinking_applied": self.thinking_applied,
            "error_status": self.error_status,
        }


@dataclass(frozen=True)
class Outcome:
    status: str  # completed | failed
    reason: str | None = None

    def as_dict(self) -> dict:
        return {"status": self.status, "reason": self.reason}


# The provider-error policy every adapter applies. An error that says nothing about the run (the
# same request may succeed later: network, 5xx, 429, overloaded) is a fault, redone; any other is
# the run's outcome, measured.
TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})
NETWORK_WORDS = ("connection", "econnrefused", "econnreset", "etimedout", "fetch failed",
                 "socket", "network", "timed out", "enotfound", "eai_again",
                 # what agent CLIs print for a provider's trouble (Codex for an HTTP 500)
                 "currently experiencing high demand", "stream disconnected", "idle timeout",
                 "error sending request")  # fmt: skip


def is_transient(status: int | None, message: str) -> bool:
    if status is not None:
        return status in TRANSIENT_STATUSES or status >= 500
    text = message.lower()
    return any(word in text for word in NETWORK_WORDS)


def provider_error(status: int | None, message: str, transient: bool = False) -> Outcome:
    """The outcome of a run that ended on a provider error (`status`, when the harness says it),
    or a HarnessFault when the error was transient, or when the adapter knows it was
    (`transient`: the harness retried it, or agentab's own setup failed): it is redone."""
    if transient or is_transient(status, message):
        http = f" (HTTP {status})" if status is not None else ""
        raise HarnessFault(
            f"transient provider or network error{http}, the run will be redone: {message[:500]}"
        )
    lowered = message.lower()
    if "context" in lowered and any(
        w in lowered for w in ("length", "window", "too long", "exceed")
    ):
        return Outcome("failed", f"context-overflow: {message[:500]}")
    return Outcome("failed", f"agent-error: {message[:500]}")


@dataclass(frozen=True)
class DeclaredTools:
    """The tools an extension adds, as the model calls them: names read in its source, and
    prefixes for the tools of a server it starts (their names are known only when it runs)."""

    names: frozenset[str] = frozenset()
    prefixes: frozenset[str] = frozenset()

    def declares(self, tool: str) -> bool:
        return tool in self.names or any(tool.startswith(prefix) for prefix in self.prefixes)

    def __bool__(self) -> bool:
        return bool(self.names or self.prefixes)

    def described(self) -> list[str]:
        return sorted(self.names) + [f"{prefix}*" for prefix in sorted(self.prefixes)]


CONTEXT_FILE_USE = (
    "a context file is in the prompt from the first turn: no call of the agent's shows that "
    "it followed it, so nothing beyond its delivery is observable"
)
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.S)


def front_matter(text: str) -> tuple[dict, str] | None:
    """The YAML front matter of a Markdown definition (an agent, a SKILL.md) and the body below
    it; None when the text opens with none."""
    found = FRONT_MATTER.match(text.removeprefix("\ufeff"))
    if not found:
        return None
    try:
        fields = yaml.safe_load(found.group(1))
    except yaml.YAMLError:
        # `description: Use it when: …` is not YAML, yet the harnesses read it as one line
        # each: so does agentab, rather than refuse a definition they take.
        lines = (line.partition(":") for line in found.group(1).splitlines())
        fields = {key.strip(): value.strip().strip("\"'") for key, sep, value in lines if sep}
    return (fields if isinstance(fields, dict) else {}), found.group(2)


def front_matter_name(path: Path) -> str:
    """The `name` of a Markdown definition's front matter (an agent, a SKILL.md), else ""."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    fields, _ = front_matter(text) or ({}, "")
    name = fields.get("name")
    return name.strip() if isinstance(name, str) else ""


class Installer(ABC):
    """How a harness comes onto the machine, pinned, and how what it installed is started."""

    @abstractmethod
    def install(self, harness: Harness, version: str, harnesses_dir: Path) -> Installation: ...

    @abstractmethod
    def installation(self, harness: Harness, version: str, harnesses_dir: Path) -> Installation:
        """The existing install of `version`: an AgentabError naming `agent.version` when there
        is none, or when it holds another version."""

    @abstractmethod
    def command(self, installation: Installation) -> list[str]: ...

    @abstractmethod
    def version_env(self, installation: Installation) -> dict[str, str]:
        """The environment its `--version` runs in, at install time."""


class Harness(ABC):
    name: str
    installer: Installer  # declared by the adapter: how it is installed, apart from how it runs
    # What a scenario may ask of this harness: checked when the scenario loads, so that a cell
    # it cannot run is refused before anything runs, with the reason.
    thinking_levels: tuple[str, ...] = THINKING_LEVELS
    refused_bricks: dict[str, str] = {}  # brick kind -> why it cannot be passed explicitly
    # The APIs of a declared provider (`[providers.<name>] api`) it can be pointed at.
    declared_apis: frozenset[str] = frozenset()
    prompt_in_argv: bool = True  # the task is one argument of the command line (Linux: 128 KiB)
    # brick kind -> why a receipt cannot prove that a brick of this kind reached the model
    unprovable_bricks: dict[str, str] = {}
    # The tools the harness offers by itself, when known: a tool beyond them is evidence that
    # an extension was loaded.
    builtin_tools: frozenset[str] | None = None
    # Whether its stream states each run's cost; a run of one that does not is priced from its
    # tokens (agentab.prices), and a budget needs the model's price (checked at load).
    reports_cost: bool = True

    def install(self, version: str, harnesses_dir: Path) -> Installation:
        return self.installer.install(self, version, Path(harnesses_dir))

    def installation(self, version: str, harnesses_dir: Path) -> Installation:
        return self.installer.installation(self, version, Path(harnesses_dir))

    def command(self, installation: Installation) -> list[str]:
        """The argv prefix that starts the installed harness."""
        return self.installer.command(installation)

    def version_env(self, installation: Installation) -> dict[str, str]:
        return self.installer.version_env(installation)

    def parse_version(self, output: str) -> str:
        """The version from the harness's `--version` output (its first word by default)."""
        words = output.strip().split()
        return words[0] if words else ""

    @abstractmethod
    def prepare(self, spec: RunSpec, installation: Installation) -> Invocation: ...

    @abstractmethod
    def read_stream(self, path: Path, spec: RunSpec | None = None) -> StreamFacts: ...

    @abstractmethod
    def transcript(self, path: Path, spec: RunSpec | None = None) -> list[dict]: ...

    @abstractmethod
    def sent_thinking(self, level: str, model: str, provider: str = "offline") -> str | None: ...

    @abstractmethod
    def classify(self, facts: StreamFacts, exit_code: int | None, timed_out: bool) -> Outcome: ...

    # brick kind -> why no run shows whether the agent used a brick of this kind
    unobservable_use: dict[str, str] = {"context_files": CONTEXT_FILE_USE}

    def skill_tool_loads(self, call: dict, result: dict | None) -> tuple[str, ...]:
        """The skills a transcript call loaded through the harness's own skill tool, as the
        harness names them; `result` is the call's result line, when the transcript has it."""
        return ()

    def agents_called(self, call: dict) -> tuple[str, ...]:
        """The agent definitions (by the name the harness knows them by) a call ran."""
        return ()

    def extension_tools(self, path: Path) -> DeclaredTools:
        """The tools the extension at `path` declares, as the model calls them."""
        return DeclaredTools()

    def agent_name(self, path: Path) -> str:
        """The name the harness knows an agent definition by: its front matter's, else the
        file's stem."""
        return front_matter_name(path) or Path(path).stem
