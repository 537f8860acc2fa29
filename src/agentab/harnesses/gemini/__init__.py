"""The Gemini CLI adapter (`@google/gemini-cli`, 0.61).

Facts measured on the real binary against the offline model are in docs/harnesses.md
("Gemini CLI"). Isolation, and why (each line is a way a cell could silently measure something
else):

- A constructed environment: PATH is Node's folder and the system's; HOME, TMPDIR and
  GEMINI_CLI_HOME point into the run's scratch dir (Gemini CLI reads `~/.gemini/` from
  GEMINI_CLI_HOME: user settings, global context files, extensions, agents, skills, `.env`).
  GEMINI_CLI_SYSTEM_SETTINGS_PATH and GEMINI_CLI_SYSTEM_DEFAULTS_PATH name files that do not
  exist, so a machine's `/etc/gemini-cli/settings.json` (which outranks every other settings
  file) is never read. GEMINI_CLI_NO_RELAUNCH keeps one process (no child Node with other
  memory flags, which the process-group kill would also have to find).
- The run's own settings (`~/.gemini/settings.json`): API-key auth (GOOGLE_GEMINI_BASE_URL alone
  selects a "gateway" auth that 0.61 then refuses), no telemetry or usage statistics, no
  automatic update, no checkpointing, skills and hooks off, `maxAttempts: 1` (else a provider
  error is retried for minutes), `advanced.ignoreLocalEnv` (else a `.env` in the clone or any
  ancestor sets variables for the agent and its tools), `memoryBoundaryMarkers: []` (context
  files are looked for in the working directory only, never in its ancestors), and the
  context-file names of the run's bricks.
- Trust: headless Gemini CLI refuses an untrusted folder (exit 55), and an untrusted folder
  forces the `default` approval mode. `--skip-trust` trusts the workspace after the settings are
  loaded, so the etalon's `.gemini/settings.json` is never merged (the same for every cell, as
  pi's `-na`), while the run is trusted for its tools. What a trusted folder still reads from
  the etalon is handled one by one: project agents need an acknowledgement a fresh home never
  holds; workspace policies are switched off in 0.61; workspace extensions do not exist (only
  `~/.gemini/extensions`); `.gemini/commands` run only for a prompt that starts with "/", which
  `prepare` refuses; and a context file
  of the etalon (`GEMINI.md`, which Gemini CLI always adds to the configured names and loads from
  the working directory, or from a sub-directory the agent touches) cannot be switched off at
  all: `prepare` refuses such an etalon rather than let it reach the model.
- `--approval-mode yolo`: in the default mode a headless run silently loses every tool that
  asks for confirmation (`replace`, `write_file`, `run_shell_command`, ...).
- Bricks by explicit path: a context file is copied to `~/.gemini/<unique name>` and its name
  set in `context.fileName`: Gemini CLI appends such a global context file to the system
  instruction (`<loaded_context>`), which is what the other harnesses do with a context file
  (`GEMINI_SYSTEM_MD` would replace the whole system prompt instead). An extension (a folder with
  `gemini-extension.json`) is copied to `~/.gemini/extensions/` and named with `-e`; without one,
  `-e none`. An agent definition is copied to `~/.gemini/agents/`. Skills cannot be passed by
  path: Gemini CLI finds skills only by discovery, in the workspace too, so the kind is refused.
- Thinking: `thinkingConfig` through `modelConfigs.overrides` for the run's model (see
  `thinking_config`).

The stream-json stream is read in `stream.py`.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.harnesses.base import (
    DeclaredTools,
    Harness,
    HarnessFault,
    Invocation,
    Outcome,
    RunSpec,
    StreamFacts,
    provider_error,
)
from agentab.harnesses.gemini.stream import gemini_transcript, read_gemini_stream
from agentab.harnesses.npm import NpmPackage, base_path
from agentab.harnesses.shared import brick_text, constructed_env, copy_brick, refused_brick

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
# Gemini 2.5 (and any model that is not Gemini 3, the offline model included): a token budget.
# 0 switches thinking off (Flash; 2.5 Pro cannot switch it off and answers an error).
THINKING_BUDGETS = {
    "off": 0,
    "minimal": 512,
    "low": 2048,
    "medium": 8192,  # Gemini CLI's own default for 2.5 models
    "high": 16384,
    "xhigh": 24576,  # the ceiling of 2.5 Flash
    "max": 32768,  # the ceiling of 2.5 Pro
}
# Gemini 3: a level. It has no "off" and nothing above HIGH: those levels are refused rather
# than sent as a neighbour, which would make two cells identical.
THINKING_LEVELS_GEMINI_3 = {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH"}

CONTEXT_FILE_PREFIX = "agentab-context-"
# Gemini CLI adds this name to every configured list and loads it from the working directory.
ALWAYS_LOADED_CONTEXT = "GEMINI.md"
# Ends every path we do not want read: a file that cannot exist in the scratch dir.
ABSENT = "absent-on-purpose"
PROVIDERS = ("offline", "google", "gemini")


SKILLS_REFUSED = (
    "Gemini CLI finds skills only by discovery (the workspace's too); it takes none by path, "
    "and switching discovery on would let the etalon's skills in"
)


class GeminiHarness(Harness):
    name = "gemini"
    reports_cost = False  # its stream states tokens only: priced by agentab.prices
    installer = NpmPackage("@google/gemini-cli", bin_name="gemini")
    refused_bricks = {"skills": SKILLS_REFUSED}

    def version_env(self, installation) -> dict[str, str]:
        home = str(installation.root)
        return {"PATH": base_path(), "HOME": home, "GEMINI_CLI_HOME": home}

    # ------------------------------------------------------------------------ one run

    def prepare(self, spec: RunSpec, installation) -> Invocation:
        check_provider(spec.provider)
        check_prompt(spec.prompt)
        thinking = thinking_config(spec.thinking, spec.model)
        refuse_etalon_context_files(spec.clone, spec.bricks)
        home, tmp = spec.scratch / "home", spec.scratch / "tmp"
        gemini_dir = home / ".gemini"
        files: dict[Path, str] = {tmp / ".keep": ""}
        passed_as: dict[str, str] = {}
        context_names: list[str] = []
        extension_names: list[str] = []
        for number, brick in enumerate(spec.bricks, start=1):
            how = place_brick(brick, number, gemini_dir, files, context_names, extension_names)
            passed_as[brick.rel] = how
        settings = run_settings(spec.model, thinking, context_names)
        files[gemini_dir / "settings.json"] = json.dumps(settings, indent=2)
        env = constructed_env(
            base_path(),
            home,
            tmp,
            GEMINI_CLI_HOME=str(home),
            GEMINI_CLI_SYSTEM_SETTINGS_PATH=str(spec.scratch / ABSENT / "settings.json"),
            GEMINI_CLI_SYSTEM_DEFAULTS_PATH=str(spec.scratch / ABSENT / "defaults.json"),
            GEMINI_CLI_NO_RELAUNCH="true",
            NODE_USE_SYSTEM_CA="1",
        )
        secret = {"GEMINI_API_KEY"}
        env.update(provider_env(spec))
        argv = [*self.command(installation), f"--prompt={spec.prompt}"]
        argv += ["--model", spec.model, "--output-format", "stream-json"]
        argv += ["--skip-trust", "--approval-mode", "yolo"]
        for name in extension_names or ["none"]:
            argv += ["--extensions", name]
        return Invocation(
            argv=argv,
            env=env,
            cwd=spec.clone,
            files=files,
            passed_as=passed_as,
            secret_env=frozenset(secret),
        )

    # ------------------------------------------------------------------------ brick use

    def agents_called(self, call: dict) -> tuple[str, ...]:
        """Its `invoke_agent` tool, `{"agent_name": …, "prompt": …}` (measured)."""
        if call.get("tool") != "invoke_agent":
            return ()
        name = (call.get("input") or {}).get("agent_name")
        return (name,) if isinstance(name, str) else ()

    def extension_tools(self, path: Path) -> DeclaredTools:
        """An extension's MCP servers (`mcpServers` of its gemini-extension.json): measured,
        server `zq`'s tool `zq_lookup` is offered and called as `mcp_zq_zq_lookup`. An
        extension that declares none (a context file, commands) adds no tool to call."""
        try:
            manifest = json.loads((Path(path) / "gemini-extension.json").read_text("utf-8"))
        except (OSError, ValueError):
            return DeclaredTools()
        servers = manifest.get("mcpServers") if isinstance(manifest, dict) else None
        servers = servers if isinstance(servers, dict) else {}
        return DeclaredTools(prefixes=frozenset(f"mcp_{server}_" for server in servers))

    def read_stream(self, path: Path, spec: RunSpec | None = None) -> StreamFacts:
        return read_gemini_stream(Path(path))

    def transcript(self, path: Path, spec: RunSpec | None = None) -> list[dict]:
        return gemini_transcript(Path(path))

    def sent_thinking(self, level: str, model: str, provider: str = "offline") -> str | None:
        config = thinking_config(level, model)
        if "thinkingLevel" in config:
            return config["thinkingLevel"].lower()
        budget = config["thinkingBudget"]
        return f"budget:{budget}" if budget else None

    def classify(self, facts: StreamFacts, exit_code: int | None, timed_out: bool) -> Outcome:
        if timed_out:
            return Outcome("failed", "timeout")
        if facts.stop_reason == "error":
            return classify_error(facts, exit_code)
        if not facts.settled:
            raise HarnessFault(
                f"Gemini CLI exited with code {exit_code} without a result (see agent-stderr.log)"
            )
        if exit_code != 0:
            raise HarnessFault(f"Gemini CLI exited with code {exit_code} after a success result")
        if facts.turns == 0:
            raise HarnessFault("Gemini CLI ended without an assistant message")
        return Outcome("completed")


# ---------------------------------------------------------------------------- settings


def check_provider(provider: str) -> None:
    if provider not in PROVIDERS:
        raise AgentabError(
            problem(
                "scenario",
                "agent.provider",
                f"Gemini CLI speaks the Gemini API only; it cannot use provider {provider!r}",
                f"use one of: {', '.join(PROVIDERS)}",
            )
        )


def check_prompt(prompt: str) -> None:
    """Headless Gemini CLI runs a prompt that starts with "/" as a slash command, the etalon's
    `.gemini/commands` included (measured): such a prompt would send the etalon's text."""
    if prompt.lstrip().startswith("/"):
        raise AgentabError(
            problem(
                "scenario",
                "task.prompt",
                "the prompt starts with '/', which Gemini CLI runs as a slash command (the "
                "etalon's .gemini/commands included) instead of sending it",
                "start the prompt with a word; put the command's text in the prompt itself",
            )
        )


def is_gemini_3(model: str) -> bool:
    return model.startswith("gemini-3")


def thinking_config(level: str, model: str) -> dict:
    """The `thinkingConfig` a declared level becomes for `model` (documented mapping)."""
    if level not in THINKING_LEVELS:
        raise AgentabError(
            problem(
                "scenario",
                "agent.thinking",
                f"Gemini CLI has no thinking level {level!r}",
                f"use one of: {', '.join(THINKING_LEVELS)}",
            )
        )
    if not is_gemini_3(model):
        return {"thinkingBudget": THINKING_BUDGETS[level]}
    if level not in THINKING_LEVELS_GEMINI_3:
        raise AgentabError(
            problem(
                "scenario",
                "agent.thinking",
                f"{model} takes a thinking level (MINIMAL, LOW, MEDIUM, HIGH): it cannot think "
                f"{level!r}, and sending a neighbour would measure another cell's setting",
                f"use one of: {', '.join(THINKING_LEVELS_GEMINI_3)}",
            )
        )
    return {"thinkingLevel": THINKING_LEVELS_GEMINI_3[level]}


def run_settings(model: str, thinking: dict, context_names: list[str]) -> dict:
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {
            "maxAttempts": 1,
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "checkpointing": {"enabled": False},
        },
        "skills": {"enabled": False},
        "hooksConfig": {"enabled": False},
        "advanced": {"ignoreLocalEnv": True},
        "context": {
            # Gemini CLI keeps GEMINI.md in the list whatever is set here; a name of our own
            # keeps the list from being only that.
            "fileName": context_names or [f"{CONTEXT_FILE_PREFIX}none.md"],
            "memoryBoundaryMarkers": [],
        },
        "modelConfigs": {
            "overrides": [
                {
                    "match": {"model": model},
                    "modelConfig": {"generateContentConfig": {"thinkingConfig": thinking}},
                }
            ]
        },
    }


def provider_env(spec: RunSpec) -> dict[str, str]:
    env = {"GEMINI_API_KEY": spec.api_key or "offline"}
    if spec.model_base_url:
        env["GOOGLE_GEMINI_BASE_URL"] = spec.model_base_url
    elif spec.provider == "offline":
        raise HarnessFault("provider offline needs the URL of its offline model server")
    return env


def refuse_etalon_context_files(clone: Path, bricks) -> None:
    """An etalon context file would reach the model whatever the settings say: refuse it."""
    names = {ALWAYS_LOADED_CONTEXT}
    found = [
        path
        for path in tracked_files(clone)
        if Path(path).name in names or Path(path).name.startswith(CONTEXT_FILE_PREFIX)
    ]
    if found:
        raise AgentabError(
            problem(
                "scenario",
                "etalon.tag",
                f"the etalon holds {', '.join(found[:5])}: Gemini CLI 0.61 loads a GEMINI.md "
                "of the working directory (and of any sub-directory the agent touches) whatever "
                "its settings say, so it would reach the model in every cell",
                "remove it from the etalon's tag, and declare its text as a context_files brick "
                "where it should be measured",
            )
        )


def tracked_files(clone: Path) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(clone), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(clone)},
        timeout=60,
    )
    if done.returncode != 0:
        raise HarnessFault(f"git ls-files in {clone} failed: {done.stderr.decode()[-300:]}")
    return [name for name in done.stdout.decode().split("\0") if name]


def place_brick(brick, number, gemini_dir, files, context_names, extension_names) -> str:
    source = Path(brick.path)
    if brick.kind == "context_files":
        name = f"{CONTEXT_FILE_PREFIX}{number:02d}-{source.name}"
        files[gemini_dir / name] = brick_text(brick)
        context_names.append(name)
        return f"global context file ~/.gemini/{name} (context.fileName)"
    if brick.kind == "extensions":
        name = extension_name(brick)
        copy_brick(brick, source, gemini_dir / "extensions" / name, files)
        extension_names.append(name)
        return f"copied to ~/.gemini/extensions/{name}, --extensions {name}"
    if brick.kind == "agents":
        files[gemini_dir / "agents" / source.name] = brick_text(brick)
        return f"copied to ~/.gemini/agents/{source.name}"
    reason = {"skills": SKILLS_REFUSED}.get(brick.kind, "Gemini CLI has no such kind")
    raise refused_brick(
        "Gemini CLI", brick, "context_files, extensions or agents with harness gemini", reason
    )


def extension_name(brick) -> str:
    manifest = Path(brick.path) / "gemini-extension.json"
    try:
        name = json.loads(manifest.read_text())["name"]
    except (OSError, ValueError, KeyError, TypeError):
        raise AgentabError(
            problem(
                "scenario",
                "extensions",
                f"{brick.rel} is not a Gemini CLI extension: no readable {manifest.name} "
                "with a name",
                "give the folder that holds gemini-extension.json",
            )
        ) from None
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", str(name)):
        raise AgentabError(
            problem("scenario", "extensions", f"{brick.rel}: odd extension name {name!r}", "")
        )
    return str(name)


# ---------------------------------------------------------------------------- the outcome

API_ERROR = "[API Error"  # how Gemini CLI opens the message of an error the provider answered


def classify_error(facts: StreamFacts, exit_code: int | None) -> Outcome:
    """A `result.status: "error"`: a transient provider error or a network error is a fault, a
    request the provider refused as invalid (4xx) is the run's own outcome (the provider-error
    policy). The status is read from the message when it holds the provider's error body (400),
    else from the exit code (429, 5xx: Gemini CLI exits with the HTTP status modulo 256); it is
    kept in the facts."""
    message = facts.errors[-1] if facts.errors else ""
    if facts.error_status is None and message.startswith(API_ERROR):
        # 429 and 5xx messages carry no code; the exit code is the status modulo 256.
        facts.error_status = status_from_exit_code(exit_code)
    return provider_error(facts.error_status, message)


def status_from_exit_code(exit_code: int | None) -> int | None:
    """The HTTP error status (400-599) whose value modulo 256 is the exit code: one at most."""
    if exit_code is None or not 0 <= exit_code <= 255:
        return None
    found = [s for s in (exit_code + 256, exit_code + 512) if 400 <= s <= 599]
    return found[0] if found else None


HARNESS = GeminiHarness
