"""The Claude Code adapter (`@anthropic-ai/claude-code`, 2.1.x).

The npm package's `bin` is `bin/claude.exe`, a native executable: its postinstall copies the
binary of the platform package (`@anthropic-ai/claude-code-linux-x64`, an optional dependency
npm installs beside it) over a placeholder. It is started directly, not through Node.js.

Isolation, and why (each line is a way a cell could silently measure something else; the facts
are measured in docs/harnesses.md):

- A constructed environment: PATH is Node's folder and the system's; HOME, TMPDIR,
  CLAUDE_CODE_TMPDIR and CLAUDE_CONFIG_DIR point into the run's private scratch dir (Claude Code
  reads `~/.claude`, `~/.claude.json` and its config dir for user settings, memory, skills,
  agents and commands). `ANTHROPIC_BASE_URL` points at the run's model server.
- No traffic but the model: auto-update, telemetry, error reporting, feedback surveys and all
  non-essential traffic off; `--no-session-persistence`.
- Discovery off: `--setting-sources ""` (no user, project or local settings: `.claude/`
  settings, skills, agents, commands and CLAUDE.md / CLAUDE.local.md in every ancestor),
  `CLAUDE_CODE_DISABLE_CLAUDE_MDS=1` and `CLAUDE_CODE_DISABLE_AUTO_MEMORY=1` behind it,
  `--strict-mcp-config` (the etalon's `.mcp.json` is never read).
- Permissions: `--dangerously-skip-permissions`; as root (unconfined) Claude Code refuses it unless
  `IS_SANDBOX=1`.
- Bricks by explicit path: context files joined in one `--append-system-prompt-file` (appended to the
  system prompt), agent definitions `--agents <json file>` built from their Markdown, skills in a
  plugin folder of our own in the scratch dir passed as `--plugin-dir`, extensions as a plugin
  folder (`--plugin-dir`) or an MCP config (`--mcp-config`). Any other extension is refused.
- Thinking depends on the model family (see `THINKING`).

The stream-json stream is read in `stream.py`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.harnesses.base import (
    DeclaredTools,
    Harness,
    HarnessFault,
    Installation,
    Invocation,
    Outcome,
    RunSpec,
    StreamFacts,
    front_matter,
    provider_error,
)
from agentab.harnesses.claude_code.stream import claude_transcript, read_claude_stream
from agentab.harnesses.npm import NpmPackage, base_path
from agentab.harnesses.shared import brick_text, constructed_env, copy_brick, refused_brick

EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
THINKING_LEVELS = ("off", *EFFORT_LEVELS)
# Thinking budgets (MAX_THINKING_TOKENS) of the budget families; high is Claude Code's own default.
BUDGETS = {"low": 4000, "medium": 10000, "high": 31999}

# How Claude Code 2.1.332 thinks, per model family (measured against the offline model):
# - "budget": `thinking: {type: enabled, budget_tokens}` from MAX_THINKING_TOKENS (default 31999,
#   0 sends `{type: disabled}`); `--effort` is ignored.
# - "budget+effort" (Opus 4.5): a budget from MAX_THINKING_TOKENS and `output_config.effort`
#   from `--effort`, both.
# - "adaptive" (every newer model, and any name Claude Code does not know, such as an offline
#   policy): `thinking: {type: adaptive}` with `output_config.effort` from `--effort`;
#   MAX_THINKING_TOKENS is ignored, only CLAUDE_CODE_DISABLE_THINKING turns it off.
# - "none" (Claude 3.x): Claude Code sends no thinking at all, whatever it is told.
# CLAUDE_CODE_DISABLE_THINKING=1 removes the `thinking` field for every family.
FAMILIES = (
    ("none", re.compile(r"^claude-3")),
    ("budget+effort", re.compile(r"^claude-opus-4-5(-\d{8})?$")),
    ("budget", re.compile(r"^claude-(sonnet-4-5|haiku-4-5|sonnet-4)(-\d{8})?$")),
)

DISCOVERY_OFF = ["--setting-sources", "", "--strict-mcp-config"]
QUIET_ENV = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    "CLAUDE_CODE_SKIP_PROMPT_HISTORY": "1",
}
PLUGIN_NAME = "agentab-bricks"  # the plugin folder skills are passed in


def thinking_family(model: str) -> str:
    return next((family for family, pattern in FAMILIES if pattern.search(model)), "adaptive")


def thinking_settings(level: str, model: str) -> tuple[list[str], dict[str, str]]:
    """The arguments and environment that make Claude Code send `level` for `model`."""
    family = thinking_family(model)
    if level not in thinking_levels(family):
        raise AgentabError(
            problem(
                "scenario",
                "agent.thinking",
                f"Claude Code has no thinking level {level!r} for model {model!r} "
                f"(model family {family!r})",
                f"use one of: {', '.join(thinking_levels(family))}",
            )
        )
    if level == "off":
        return [], {"CLAUDE_CODE_DISABLE_THINKING": "1", "MAX_THINKING_TOKENS": "0"}
    if family == "budget":
        return [], {"MAX_THINKING_TOKENS": str(BUDGETS[level])}
    if family == "budget+effort":
        return ["--effort", level], {"MAX_THINKING_TOKENS": str(BUDGETS[level])}
    return ["--effort", level], {}


def thinking_levels(family: str) -> tuple[str, ...]:
    if family == "none":
        return ("off",)
    if family.startswith("budget"):
        return ("off", *BUDGETS)
    return THINKING_LEVELS


class ClaudeCodeHarness(Harness):
    name = "claude-code"
    declared_apis = frozenset({"anthropic-messages"})
    installer = NpmPackage("@anthropic-ai/claude-code", bin_name="claude")

    def command(self, installation: Installation) -> list[str]:
        return [str(installation.entry)]  # a native executable, not a script for node

    def version_env(self, installation: Installation) -> dict[str, str]:
        return {"PATH": base_path(), "HOME": str(installation.root), "DISABLE_AUTOUPDATER": "1"}

    # ------------------------------------------------------------------------ one run

    def prepare(self, spec: RunSpec, installation: Installation) -> Invocation:
        thinking_args, thinking_env = thinking_settings(spec.thinking, spec.model)
        config, home, tmp = (spec.scratch / name for name in ("config", "home", "tmp"))
        env = constructed_env(
            base_path(),
            home,
            tmp,
            CLAUDE_CODE_TMPDIR=str(tmp),
            CLAUDE_CONFIG_DIR=str(config),
            # Root refuses bypass mode without it; a sandbox runs as a user who is not root.
            **({} if spec.confined else {"IS_SANDBOX": "1"}),
            **QUIET_ENV,
            **thinking_env,
        )
        secret = {"ANTHROPIC_API_KEY"}
        if spec.provider == "offline":
            if not spec.model_base_url:
                raise HarnessFault("provider offline needs the URL of its offline model server")
            env["ANTHROPIC_API_KEY"] = "offline"
        elif spec.provider == "anthropic":
            env["ANTHROPIC_API_KEY"] = spec.api_key or ""
        elif spec.endpoint is not None:  # a declared server of Anthropic messages
            env["ANTHROPIC_API_KEY"] = spec.api_key or "agentab"
        else:
            raise AgentabError(
                problem(
                    "scenario",
                    "agent.provider",
                    f"Claude Code speaks only Anthropic messages, not provider {spec.provider!r}",
                    'use provider = "anthropic" or "offline", or a server declared in '
                    '[providers.<name>] with api = "anthropic-messages"',
                )
            )
        if spec.model_base_url:
            env["ANTHROPIC_BASE_URL"] = spec.model_base_url
        files = {home / ".keep": "", tmp / ".keep": "", config / ".keep": ""}
        argv = [*self.command(installation), "-p", "--output-format", "stream-json", "--verbose"]
        argv += [*DISCOVERY_OFF, "--dangerously-skip-permissions", "--no-session-persistence"]
        argv += ["--model", spec.model, *thinking_args]
        brick_args, passed_as = brick_arguments(spec.bricks, spec.scratch, files)
        argv += [*brick_args, "--", spec.prompt]
        return Invocation(
            argv=argv,
            env=env,
            cwd=spec.clone,
            files=files,
            passed_as=passed_as,
            secret_env=frozenset(secret),
            brick_copies=skill_copies(spec.bricks, spec.scratch),
        )

    # ------------------------------------------------------------------------ brick use

    def skill_tool_loads(self, call: dict, result: dict | None) -> tuple[str, ...]:
        """Its `Skill` tool, `{"skill": …}`: measured, the front matter's name, `plugin:name`
        and `plugin:folder` all load a skill of our plugin (the folder alone is refused as an
        unknown skill); the result says "Launching skill: …", and the skill's text follows as a
        user message "Base directory for this skill: <its folder>". A refused call is none."""
        if call.get("tool") != "Skill" or (result or {}).get("is_error"):
            return ()
        skill = (call.get("input") or {}).get("skill")
        return (skill.lstrip("/").rsplit(":", 1)[-1],) if isinstance(skill, str) else ()

    def agents_called(self, call: dict) -> tuple[str, ...]:
        """Its `Agent` tool (`Task` in older versions) with `subagent_type`: measured."""
        if call.get("tool") not in ("Agent", "Task"):
            return ()
        kind = (call.get("input") or {}).get("subagent_type")
        return (kind,) if isinstance(kind, str) else ()

    def extension_tools(self, path: Path) -> DeclaredTools:
        """An MCP server's tools are named `mcp__<server>__<tool>` (measured with an MCP config
        file); a plugin's servers `mcp__plugin_<plugin>_<server>__<tool>` (Claude Code's naming;
        not measured: the probe's plugin server never started, `--strict-mcp-config` likely)."""
        return DeclaredTools(prefixes=frozenset(mcp_prefixes(Path(path))))

    def check_cell(self, model: str, thinking: str, bricks) -> None:
        """Raise the AgentabError `prepare` would raise for this model, level and bricks: for a
        scenario loader to refuse a cell before anything runs (a thinking level the model family
        cannot send, an extension that is neither a plugin folder nor an MCP config, an agent
        definition without a description)."""
        thinking_settings(thinking, model)
        brick_arguments(bricks, Path("scratch"), {})

    def read_stream(self, path: Path, spec: RunSpec | None = None) -> StreamFacts:
        return read_claude_stream(Path(path))

    def transcript(self, path: Path, spec: RunSpec | None = None) -> list[dict]:
        # The task as `prepare` passed it on the command line: the stream does not repeat it.
        return claude_transcript(Path(path), spec.prompt if spec else "")

    def sent_thinking(self, level: str, model: str, provider: str = "offline") -> str | None:
        """What `anthropic_thinking` reads from a request for `level`: the effort for the
        adaptive and Opus 4.5 families, `budget:N` for the budget family, None for off."""
        family = thinking_family(model)
        if level == "off" or family == "none":
            return None
        if family == "budget":
            return f"budget:{BUDGETS[level]}"
        return level

    def classify(self, facts: StreamFacts, exit_code: int | None, timed_out: bool) -> Outcome:
        if timed_out:
            return Outcome("failed", "timeout")
        if facts.stop_reason == "error":
            return classify_error(facts)
        if not facts.stop_reason:
            raise HarnessFault(
                f"claude ended (exit {exit_code}) without a result line: "
                f"{'; '.join(facts.errors) or 'see agent-stderr.log'}"
            )
        if exit_code != 0:
            raise HarnessFault(f"claude exited with code {exit_code}: {'; '.join(facts.errors)}")
        return Outcome("completed")


def classify_error(facts: StreamFacts) -> Outcome:
    """A result with `is_error`, by the provider-error policy; an API error without a status is
    a request that was never answered (after Claude Code's own retries): transient."""
    message = facts.errors[-1] if facts.errors else "error"
    detail = getattr(facts, "stop_reason_detail", "")  # the stream's own facts carry it
    unanswered = facts.error_status is None and detail == "api_error"
    return provider_error(facts.error_status, message, transient=unanswered)


# ---------------------------------------------------------------------------- bricks


def brick_arguments(bricks, scratch: Path, files: dict) -> tuple[list[str], dict[str, str]]:
    """Flags passing every brick by explicit path, and how each was passed."""
    argv: list[str] = []
    passed_as: dict[str, str] = {}
    agents: dict[str, dict] = {}
    plugin = scratch / "plugin"
    context = [brick for brick in bricks if brick.kind == "context_files"]
    if context:
        # Claude Code keeps only the last --append-system-prompt-file it is given (measured:
        # of two, the first never reached the model), so every context file goes in one.
        joined = scratch / "context-files.md"
        files[joined] = "\n\n".join(brick_text(brick).strip() for brick in context)
        argv += ["--append-system-prompt-file", str(joined)]
        for brick in context:
            passed_as[brick.rel] = f"--append-system-prompt-file <scratch>/{joined.name} (joined)"
    for brick in bricks:
        path = Path(brick.path).absolute()
        if brick.kind == "context_files":
            continue
        elif brick.kind == "agents":
            name, definition = agent_definition(brick, path)
            agents[name] = definition
            passed_as[brick.rel] = f"--agents <scratch>/agents.json (agent {name!r})"
        elif brick.kind == "skills":
            target = plugin / "skills" / skill_folder_name(path)
            copy_brick(brick, path, target / "SKILL.md" if path.is_file() else target, files)
            passed_as[brick.rel] = f"--plugin-dir <scratch>/plugin (skills/{path.name})"
        elif brick.kind == "extensions":
            flag = extension_flag(brick, path)
            argv += [flag, str(path)]
            passed_as[brick.rel] = f"{flag} {path}"
        else:
            raise refused_brick("Claude Code", brick, "context_files, extensions, skills or agents")
    if agents:
        files[scratch / "agents.json"] = json.dumps(agents, indent=2)
        argv += ["--agents", str(scratch / "agents.json")]
    if any(b.kind == "skills" for b in bricks):
        files[plugin / ".claude-plugin" / "plugin.json"] = json.dumps({"name": PLUGIN_NAME})
        argv += ["--plugin-dir", str(plugin)]
    return argv, passed_as


def skill_copies(bricks, scratch: Path) -> dict[str, list[Path]]:
    """Where each skill is read from besides its own path: its copy in our plugin folder."""
    plugin_skills = scratch / "plugin" / "skills"
    return {
        brick.rel: [plugin_skills / skill_folder_name(Path(brick.path).absolute())]
        for brick in bricks
        if brick.kind == "skills"
    }


def mcp_prefixes(path: Path) -> list[str]:
    """The tool-name prefix of every MCP server an extension (an MCP config file, or a plugin
    folder's `.mcp.json` and `plugin.json`) declares."""
    if path.is_file():
        return [f"mcp__{server}__" for server in mcp_servers(path)]
    plugin = json_object(path / ".claude-plugin" / "plugin.json")
    name = str(plugin.get("name") or path.name)
    servers = mcp_servers(path / ".mcp.json") + list(dict_of(plugin.get("mcpServers")))
    return [f"mcp__plugin_{name}_{server}__" for server in servers]


def mcp_servers(path: Path) -> list[str]:
    return list(dict_of(json_object(path).get("mcpServers")))


def json_object(path: Path) -> dict:
    try:
        return dict_of(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}


def dict_of(value) -> dict:
    return value if isinstance(value, dict) else {}


def skill_folder_name(path: Path) -> str:
    return path.parent.name if path.is_file() else path.name


def agent_definition(brick, path: Path) -> tuple[str, dict]:
    """An agent's Markdown (front matter name, description, tools, model; body = prompt) as an
    entry of `--agents` JSON."""
    fields, body = front_matter(brick_text(brick, path)) or ({}, "")
    if not isinstance(fields.get("description"), str) or not fields["description"].strip():
        raise AgentabError(
            problem(
                brick.rel,
                "agents",
                "an agent definition needs front matter with a description",
                "start the file with ---, description: ..., --- and put the prompt below",
            )
        )
    definition = {"description": fields["description"].strip(), "prompt": body.strip()}
    tools = fields.get("tools")
    tools = tools.split(",") if isinstance(tools, str) else tools if isinstance(tools, list) else []
    if any(str(tool).strip() for tool in tools):
        definition["tools"] = [str(tool).strip() for tool in tools if str(tool).strip()]
    if fields.get("model"):
        definition["model"] = str(fields["model"])
    return str(fields.get("name") or path.stem), definition


def extension_flag(brick, path: Path) -> str:
    """A plugin folder (hooks, MCP servers, commands, agents, skills) or an MCP config file."""
    if path.is_dir() and (path / ".claude-plugin" / "plugin.json").is_file():
        return "--plugin-dir"
    if path.is_file() and path.suffix == ".json":
        try:
            if "mcpServers" in json.loads(path.read_text()):
                return "--mcp-config"
        except json.JSONDecodeError:
            pass
    raise AgentabError(
        problem(
            brick.rel,
            "extensions",
            "Claude Code takes an extension only as a plugin folder (with "
            '.claude-plugin/plugin.json) or an MCP config file ({"mcpServers": ...}); '
            "anything else it could only find by discovery, which agentab keeps off",
            "pass a plugin folder or an MCP config JSON file",
        )
    )


HARNESS = ClaudeCodeHarness
