"""The Codex CLI adapter (`@openai/codex`, 0.171), run as `codex exec --json`.

The npm package's `codex` command is a small Node.js script that picks the platform package npm
installed beside it (`@openai/codex-linux-x64`, an alias of `@openai/codex@<version>-linux-x64`)
and replaces itself with that package's static binary. agentab starts the binary directly.

Isolation, and why (each line is a way a cell could silently measure something else):

- A constructed environment: PATH is Node's folder and the system's; HOME, TMPDIR and
  CODEX_HOME point into the run's private scratch dir (Codex reads its config, AGENTS.md and
  skills from CODEX_HOME, and skills from `~/.agents/skills`).
- `--ignore-user-config` (no `$CODEX_HOME/config.toml`), `--ignore-rules` (no execpolicy
  `.rules`), `--ephemeral` (no session files), `--strict-config` (a misspelled key of ours is
  an error, never a setting silently ignored).
- `project_doc_max_bytes=0`: Codex reads AGENTS.md (AGENTS.override.md first) in every folder
  from the git root to the cwd; the clone is a git root.
- Skills: the bundled ones are switched off (`skills.bundled.enabled=false`); every SKILL.md of
  the clone's `.agents/skills` and `.codex/skills` (Codex loads both, trusted or not) is
  disabled by path (`skills.config`). Plugins and apps off.
- An untrusted project's `.codex/config.toml` stays unread (Codex skips project config of a
  project the user config does not trust, and the user config is ignored).
- Analytics, feedback and update checks off; history not persisted.
- `--disable unbounded_connection_retries`: otherwise an unreachable server is retried forever.
- Sandbox `workspace-write` with `approval_policy="never"`: the agent edits files and runs
  commands in its cwd; nothing waits for an approval (standard input is closed).

Bricks, by explicit path:
- context files: their text as `developer_instructions` (a developer message of every request);
- skills: the skill folder copied to `$CODEX_HOME/skills/<name>/` in the run's scratch (Codex
  has no flag that loads a skill by path; `skills.config` only switches found ones on and off);
- agents: a Codex role file (TOML) as `agents.<name>.config_file`;
- extensions: refused (Codex loads no code by path).

Thinking: `model_reasoning_effort`, sent as the request's `reasoning.effort`; `off` is "none".

The `exec --json` stream is read in `stream.py`.
"""

from __future__ import annotations

import platform
import re
from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.harnesses.base import (
    Harness,
    HarnessFault,
    Installation,
    Invocation,
    Outcome,
    RunSpec,
    StreamFacts,
    provider_error,
)
from agentab.harnesses.codex.stream import codex_transcript, read_codex_stream
from agentab.harnesses.codex.stream import relative_to as relative_to  # re-exported
from agentab.harnesses.npm import NpmPackage, base_path, package_dir
from agentab.harnesses.shared import brick_text, constructed_env, copy_brick
from agentab.harnesses.shared import toml_value as toml_value  # re-exported

# agentab's thinking levels -> Codex's model_reasoning_effort. "max" has no Responses value.
REASONING_EFFORT = {
    "off": "none",
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
}
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
# The platform packages `bin/codex.js` chooses from, by (system, machine).
PLATFORM_TARGETS = {
    ("Linux", "x86_64"): ("@openai/codex-linux-x64", "x86_64-unknown-linux-musl"),
    ("Linux", "aarch64"): ("@openai/codex-linux-arm64", "aarch64-unknown-linux-musl"),
    ("Darwin", "x86_64"): ("@openai/codex-darwin-x64", "x86_64-apple-darwin"),
    ("Darwin", "arm64"): ("@openai/codex-darwin-arm64", "aarch64-apple-darwin"),
}
# The Responses endpoints of the providers Codex can be pointed at without a recording proxy.
PROVIDER_BASE_URLS = {"openai": "https://api.openai.com/v1"}
OFFLINE_PROVIDER = "offline"
# Settings every run gets: discovery, telemetry and persistence off (see the module docstring).
ISOLATION_FLAGS = [
    "--ephemeral",
    "--skip-git-repo-check",
    "--ignore-user-config",
    "--ignore-rules",
    "--strict-config",
    "--color",
    "never",
    "--sandbox",
    "workspace-write",
    "--disable",
    "unbounded_connection_retries",
    "--disable",
    "plugins",
    "--disable",
    "apps",
]
ISOLATION_CONFIG = {
    "approval_policy": '"never"',
    "project_doc_max_bytes": "0",
    "skills.bundled.enabled": "false",
    "analytics.enabled": "false",
    "feedback.enabled": "false",
    "check_for_update_on_startup": "false",
    "history.persistence": '"none"',
}


class CodexHarness(Harness):
    name = "codex"
    reports_cost = False  # its stream states tokens only: priced by agentab.prices
    installer = NpmPackage("@openai/codex", bin_name="codex")
    # An agent definition that is not a .toml role file is refused at the run (brick_refusal).
    refused_bricks = {
        "extensions": "Codex CLI loads no extension by path (its plugins are installed and "
        "discovered, and are switched off for isolation)"
    }

    # Why the use of these kinds cannot be told from a run (the rest: agentab.harnesses.base).
    unobservable_use = {
        **Harness.unobservable_use,
        "agents": "Codex runs a role through `spawn_agent` of its `multi_agent_v1` tool "
        "namespace, which the offline model cannot call: how its stream shows one was not "
        "measured, so a role's use is not read",
    }

    def command(self, installation: Installation) -> list[str]:
        return [str(native_binary(installation.root))]

    def parse_version(self, output: str) -> str:
        # `codex --version` prints "codex-cli 0.171.0"
        words = output.strip().split()
        return words[-1] if words else ""

    # ------------------------------------------------------------------------ one run

    def prepare(self, spec: RunSpec, installation) -> Invocation:
        effort = reasoning_effort(spec.thinking)
        codex_home, home, tmp = (spec.scratch / name for name in ("codex-home", "home", "tmp"))
        env = constructed_env(base_path(), home, tmp, CODEX_HOME=str(codex_home))
        files = {codex_home / ".keep": "", home / ".keep": "", tmp / ".keep": ""}
        config = run_config(spec, env, effort)
        key_variable = provider_key_variable(spec.provider) if spec.api_key else None
        passed_as = {}
        instructions = []
        for brick in spec.bricks:
            passed_as[brick.rel] = pass_brick(brick, codex_home, files, config, instructions)
        if instructions:
            config["developer_instructions"] = toml_value("\n\n".join(instructions))
        argv = [*self.command(installation), "exec", "--json", *ISOLATION_FLAGS]
        if spec.confined:
            # Codex's own bwrap cannot map its user inside agentab's sandbox, whose capabilities
            # are dropped (measured: "setting up uid map: Operation not permitted" on every
            # command); agentab's sandbox already keeps it to its clone, scratch and endpoint.
            argv[argv.index("workspace-write")] = "danger-full-access"
        for key, value in config.items():
            argv += ["-c", f"{key}={value}"]
        argv += ["--model", spec.model, "--", spec.prompt]
        return Invocation(
            argv=argv,
            env=env,
            cwd=spec.clone,
            files=files,
            passed_as=passed_as,
            secret_env=frozenset({key_variable} if key_variable else ()),
            brick_copies=skill_copies(spec.bricks, codex_home),
        )

    def read_stream(self, path: Path, spec: RunSpec | None = None) -> StreamFacts:
        return read_codex_stream(Path(path))

    def transcript(self, path: Path, spec: RunSpec | None = None) -> list[dict]:
        # Paths in the stream are the clone's where the harness saw it: made relative to it. The
        # task as `prepare` passed it: the stream does not repeat it.
        if spec is None:
            return codex_transcript(Path(path))
        return codex_transcript(Path(path), Path(spec.clone), spec.prompt)

    def sent_thinking(self, level: str, model: str, provider: str = "offline") -> str | None:
        # The wire module reads reasoning.effort; "none" (what "off" sends) asks for no reasoning.
        effort = REASONING_EFFORT.get(level, level)
        return None if effort == "none" else effort

    def classify(self, facts: StreamFacts, exit_code: int | None, timed_out: bool) -> Outcome:
        if timed_out:
            return Outcome("failed", "timeout")
        if facts.stop_reason == "failed":
            error = facts.errors[-1] if facts.errors else ""
            # Codex retries only transient errors, and a missing key variable is our own setup.
            retried = any(RETRY_NOTICE.match(line) for line in facts.errors)
            return provider_error(
                facts.error_status, error, retried or SETUP_ERROR in error.lower()
            )
        if exit_code != 0:
            raise HarnessFault(f"codex exited with code {exit_code}: {'; '.join(facts.errors)}")
        if facts.stop_reason != "completed":
            raise HarnessFault("codex ended without finishing its turn (see agent-stderr.log)")
        return Outcome("completed")


def run_config(spec: RunSpec, env: dict[str, str], effort: str) -> dict[str, str]:
    """The `-c` settings of a run before its bricks: isolation, provider, thinking, and the
    clone's own skills switched off."""
    config = dict(ISOLATION_CONFIG)
    config.update(provider_config(spec, env))
    if spec.api_key:
        # Codex hands its whole environment to the commands it runs: the key stays with Codex.
        key_variable = provider_key_variable(spec.provider)
        config["shell_environment_policy.exclude"] = toml_value([key_variable])
    config["model_reasoning_effort"] = toml_value(effort)
    found_skills = project_skills(spec.clone)
    if found_skills:
        disabled = [{"path": str(path), "enabled": False} for path in found_skills]
        config["skills.config"] = toml_value(disabled)
    return config


def native_binary(root: Path) -> Path:
    """The static binary of the platform package npm installed beside `@openai/codex`."""
    target = PLATFORM_TARGETS.get((platform.system(), platform.machine()))
    if target is None:
        raise HarnessFault(f"Codex CLI has no binary for {platform.system()} {platform.machine()}")
    package, triple = target
    binary = package_dir(root, package) / "vendor" / triple / "bin" / "codex"
    if not binary.is_file():
        raise HarnessFault(f"{binary} is missing (npm did not install {package}); delete {root}")
    return binary


def reasoning_effort(level: str) -> str:
    if level not in REASONING_EFFORT:
        known = ", ".join(REASONING_EFFORT)
        reason = (
            "the Responses API has no reasoning effort above xhigh"
            if level == "max"
            else f"agentab's levels are {', '.join(THINKING_LEVELS)}"
        )
        raise AgentabError(
            problem(
                "scenario",
                "agent.thinking",
                f"Codex cannot be given thinking level {level!r}: {reason}",
                f"use one of: {known}",
            )
        )
    return REASONING_EFFORT[level]


def provider_config(spec: RunSpec, env: dict[str, str]) -> dict[str, str]:
    """The model provider settings: the offline model, or a provider's Responses endpoint (the
    run's recording proxy when there is one), with its key in the constructed environment."""
    base_url = f"{spec.model_base_url}/v1" if spec.model_base_url else None
    if spec.provider == OFFLINE_PROVIDER and not base_url:
        raise HarnessFault("provider offline needs the URL of its offline model server")
    if spec.provider != OFFLINE_PROVIDER and spec.provider not in PROVIDER_BASE_URLS:
        raise AgentabError(
            problem(
                "scenario",
                "agent.provider",
                f"Codex speaks only the OpenAI Responses API; agentab knows no Responses "
                f"endpoint for provider {spec.provider!r}",
                f"use one of: {', '.join([OFFLINE_PROVIDER, *PROVIDER_BASE_URLS])}",
            )
        )
    base_url = base_url or PROVIDER_BASE_URLS[spec.provider]
    provider = {"name": spec.provider, "base_url": base_url, "wire_api": "responses"}
    if spec.api_key:
        provider["env_key"] = provider_key_variable(spec.provider)
        env[provider["env_key"]] = spec.api_key
    name = "agentab"
    return {"model_provider": toml_value(name), f"model_providers.{name}": toml_value(provider)}


def provider_key_variable(provider: str) -> str:
    return f"{provider.upper().replace('-', '_')}_API_KEY"


def project_skills(clone: Path) -> list[Path]:
    """Every SKILL.md Codex 0.171 would load from the project: `.agents/skills` and
    `.codex/skills` of each folder from the git root to the cwd (here: the clone itself)."""
    found = []
    for folder in (".agents/skills", ".codex/skills"):
        root = Path(clone) / folder
        if root.is_dir():
            found += sorted(p.absolute() for p in root.rglob("SKILL.md") if p.is_file())
    return found


def brick_refusal(kind: str, path: Path) -> tuple[str, str] | None:
    """(why, fix) when Codex cannot take this brick by explicit path, else None: what a
    scenario check can say before anything runs."""
    if kind in ("context_files", "skills") or (kind == "agents" and Path(path).suffix == ".toml"):
        return None
    return REFUSED.get(kind, UNKNOWN_KIND)


def pass_brick(brick, codex_home: Path, files: dict, config: dict, instructions: list) -> str:
    path = Path(brick.path).absolute()
    refusal = brick_refusal(brick.kind, path)
    if refusal:
        raise AgentabError(problem("scenario", brick.kind, *refusal))
    if brick.kind == "context_files":
        instructions.append(brick_text(brick, path).strip())
        return f"developer_instructions (the text of {path})"
    if brick.kind == "skills":
        folder = path if path.is_dir() else path.parent
        copy_brick(brick, folder, codex_home / "skills" / folder.name, files)
        return f"copied to <CODEX_HOME>/skills/{folder.name}"
    role = re.sub(r"[^A-Za-z0-9_-]+", "_", path.stem)  # an agent, as brick_refusal allows
    config[f"agents.{role}"] = toml_value({"config_file": str(path)})
    return f"agents.{role}.config_file = {path}"


def skill_copies(bricks, codex_home: Path) -> dict[str, list[Path]]:
    """Where Codex reads each skill: its copy in `$CODEX_HOME/skills/` (`pass_brick`), the
    path its skills list gives the model (measured: `r0/<folder>/SKILL.md`, `r0` the root)."""
    copies = {}
    for brick in bricks:
        if brick.kind == "skills":
            path = Path(brick.path).absolute()
            copies[brick.rel] = [
                codex_home / "skills" / (path if path.is_dir() else path.parent).name
            ]
    return copies


# Brick kinds (or forms) Codex cannot take by explicit path: (what, fix).
REFUSED = {
    "extensions": (
        "Codex CLI loads no extension by path (its plugins are installed and discovered, and "
        "are switched off for isolation)",
        "remove the extension from this scenario's Codex cells",
    ),
    "agents": (
        "Codex CLI takes an agent definition as a role file in TOML (description, "
        "developer_instructions, …) through agents.<name>.config_file",
        "give the agent brick as a .toml Codex role file",
    ),
}
UNKNOWN_KIND = ("Codex CLI cannot take this kind of brick", "use context_files, skills or agents")


# ---------------------------------------------------------------------------- the outcome

# Errors Codex prints while it retries a transient failure (a 5xx, a dropped connection).
RETRY_NOTICE = re.compile(r"^Reconnecting\.\.\.")
SETUP_ERROR = "missing environment variable"


HARNESS = CodexHarness
