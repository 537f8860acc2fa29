"""The pi adapter (`@earendil-works/pi-coding-agent`, 1.x).

Isolation, and why (each line is a way a cell could silently measure something else):

- A constructed environment: PATH is Node's folder, /usr/local/bin,
  /usr/bin and /bin; HOME, TMPDIR and PI_CODING_AGENT_DIR point into the run's private scratch
  dir. pi reads user config from HOME and its agent dir, and skills from `~/.agents/skills`.
- `PI_OFFLINE=1`, `PI_SKIP_VERSION_CHECK=1`, `PI_TELEMETRY=0`, `--no-session`: no network
  activity besides the model, nothing persisted between runs.
- Discovery off: `-nc` (AGENTS.md/CLAUDE.md in every ancestor up to `/`), `-ne`, `-ns`, `-np`,
  `--no-themes`; `-na` decides project trust (never trusted), so `.pi/settings.json`,
  `.pi/SYSTEM.md`, `.pi/APPEND_SYSTEM.md`, `.pi/extensions` and `.agents/skills` of the etalon are
  ignored explicitly, and `defaultProjectTrust = "never"` in the run's own settings backs it up.
- Bricks by explicit path: context files `--append-system-prompt <path>` (pi has no flag for a
  context file; an existing path is read as a file), extensions `-e <path>`, skills
  `--skill <path>`, agent definitions copied to `<agent dir>/agents/`, where pi's subagent
  extension reads user agents.
- Thinking `--thinking <level>`. pi drops it silently for a model it believes cannot reason, so
  the offline model is declared `reasoning: true`.
- Provider `offline`: the run's `models.json` declares a provider `offline` speaking OpenAI chat
  completions at the run's own offline model server, priced at zero: it costs nothing.
- A declared provider (`[providers.<name>]`): the same, at the run's recording proxy to the
  declared server, with the declaration's context window, longest reply, reasoning and price.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentab.harnesses.base import (
    ANY_REASONING,
    DeclaredTools,
    Harness,
    HarnessFault,
    Invocation,
    Outcome,
    RunSpec,
    StreamFacts,
    provider_error,
    stream_events,
    stream_facts_events,
    transcript_call,
    transcript_message,
    transcript_result,
)
from agentab.harnesses.npm import NpmPackage, base_path
from agentab.harnesses.shared import brick_text, constructed_env, refused_brick

# The offline model costs nothing, and pi is told so (its stream then reports 0, not a guess).
OFFLINE_COST = {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0}


def offline_cost(price: dict[str, float] | None) -> dict[str, float]:
    """pi's `cost` of the offline model: nothing, or the policy's price (USD per million
    tokens, cache tokens at the input price), which pi then reports in its stream."""
    if not price:
        return OFFLINE_COST
    return {
        "input": price["input"],
        "output": price["output"],
        "cacheRead": price["input"],
        "cacheWrite": price["input"],
    }


DISCOVERY_OFF = ["-nc", "-ne", "-ns", "-np", "--no-themes", "-na"]


class PiHarness(Harness):
    name = "pi"
    installer = NpmPackage("@earendil-works/pi-coding-agent", bin_name="pi")
    builtin_tools = frozenset({"read", "bash", "edit", "write"})
    declared_apis = frozenset({"openai-completions", "anthropic-messages"})
    unprovable_bricks = {
        "agents": "pi's subagent extension reads agent definitions from pi's agent folder and "
        "leaves no trace of them in the model request until it runs one",
    }

    def version_env(self, installation) -> dict[str, str]:
        return {"PATH": base_path(), "HOME": str(installation.root), "PI_OFFLINE": "1"}

    # ------------------------------------------------------------------------ brick use
    # pi has no skill tool: its system prompt lists each skill with the path of its SKILL.md
    # and tells the model to load it with `read` (measured), which agentab sees by its path.

    def extension_tools(self, path: Path) -> DeclaredTools:
        return DeclaredTools(names=frozenset(DECLARED_TOOL.findall(extension_source(path))))

    def agents_called(self, call: dict) -> tuple[str, ...]:
        """pi runs an agent definition through the `subagent` tool of its subagent extension
        (examples/extensions/subagent, read in its source): `agent`, or `agent` of each item
        of `tasks` (parallel) or `chain` (in sequence)."""
        if call.get("tool") != "subagent" or not isinstance(call.get("input"), dict):
            return ()
        arguments = call["input"]
        items = [arguments, *listed(arguments.get("tasks")), *listed(arguments.get("chain"))]
        return tuple(
            str(item["agent"])
            for item in items
            if isinstance(item, dict) and isinstance(item.get("agent"), str)
        )

    # ------------------------------------------------------------------------ one run

    def prepare(self, spec: RunSpec, installation) -> Invocation:
        agent_dir, home, tmp = (spec.scratch / name for name in ("agent", "home", "tmp"))
        env = constructed_env(
            base_path(),
            home,
            tmp,
            PI_CODING_AGENT_DIR=str(agent_dir),
            PI_OFFLINE="1",
            PI_SKIP_VERSION_CHECK="1",
            PI_TELEMETRY="0",
            # The machine's trust store, for providers reached through a site's own CA.
            NODE_USE_SYSTEM_CA="1",
        )
        files = {
            agent_dir / "settings.json": json.dumps({"defaultProjectTrust": "never"}, indent=2),
            home / ".keep": "",
            tmp / ".keep": "",
        }
        secret: set[str] = set()
        if spec.provider == "offline":
            files[agent_dir / "models.json"] = offline_models_json(spec)
        elif spec.endpoint is not None:
            files[agent_dir / "models.json"] = declared_models_json(spec)
        else:
            if spec.model_base_url:  # the run's recording proxy stands in for the provider
                files[agent_dir / "models.json"] = proxied_models_json(spec)
            if spec.api_key:
                name = provider_key_variable(spec.provider)
                env[name] = spec.api_key
                secret.add(name)
        argv = [*self.command(installation), "--mode", "json"]
        argv += ["--no-session", *DISCOVERY_OFF, "--offline"]
        argv += ["--provider", spec.provider, "--model", spec.model, "--thinking", spec.thinking]
        passed_as = {}
        for brick in spec.bricks:
            flag_args, how = brick_arguments(brick, agent_dir, files)
            argv += flag_args
            passed_as[brick.rel] = how
        argv += ["--", spec.prompt]
        return Invocation(
            argv=argv,
            env=env,
            cwd=spec.clone,
            files=files,
            passed_as=passed_as,
            secret_env=frozenset(secret),
        )

    def read_stream(self, path: Path, spec: RunSpec | None = None) -> StreamFacts:
        return read_pi_stream(Path(path))

    def transcript(self, path: Path, spec: RunSpec | None = None) -> list[dict]:
        return pi_transcript(Path(path))

    def sent_thinking(self, level: str, model: str, provider: str = "offline") -> str | None:
        # "off" sends no reasoning setting at all. To the offline model (whose catalogue entry
        # agentab writes) pi sends its level as `reasoning_effort`. To a real provider pi maps
        # the level per model from its own catalogue (an effort, a token budget, a clamped
        # level), so the receipt checks that a setting was sent, and shows which.
        if level == "off":
            return None
        return level if provider == "offline" else ANY_REASONING

    def classify(self, facts: StreamFacts, exit_code: int | None, timed_out: bool) -> Outcome:
        if timed_out:
            return Outcome("failed", "timeout")
        if facts.stop_reason == "error":
            return provider_error(facts.error_status, facts.errors[-1] if facts.errors else "")
        if facts.stop_reason == "aborted":
            return Outcome("failed", "agent-error: aborted")
        if exit_code != 0:
            raise HarnessFault(f"pi exited with code {exit_code}: {'; '.join(facts.errors)}")
        if not facts.stop_reason:
            raise HarnessFault("pi ended without an assistant message (see stderr.log)")
        return Outcome("completed")


# The variable pi reads a provider's key from. Set in the constructed environment only, from
# the credentials file; run.json records the name with the value shown as <secret>.
PROVIDER_KEY_VARIABLES = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "google": "GEMINI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "xai": "XAI_API_KEY",
}


def provider_key_variable(provider: str) -> str:
    return PROVIDER_KEY_VARIABLES.get(provider, f"{provider.upper().replace('-', '_')}_API_KEY")


def brick_arguments(brick, agent_dir: Path, files: dict) -> tuple[list[str], str]:
    path = str(Path(brick.path).absolute())
    if brick.kind == "context_files":
        return ["--append-system-prompt", path], f"--append-system-prompt {path}"
    if brick.kind == "extensions":
        return ["-e", path], f"-e {path}"
    if brick.kind == "skills":
        return ["--skill", path], f"--skill {path}"
    if brick.kind == "agents":
        target = agent_dir / "agents" / Path(brick.path).name
        files[target] = brick_text(brick)
        return [], f"copied to <agent dir>/agents/{target.name}"
    raise refused_brick("pi", brick, "context_files, extensions, skills or agents")


def offline_models_json(spec: RunSpec) -> str:
    if not spec.model_base_url:
        raise HarnessFault("provider offline needs the URL of its offline model server")
    model = catalogue_model(spec, context_window=128000, max_tokens=16384)
    provider = catalogue_provider(f"{spec.model_base_url}/v1", "openai-completions", model)
    provider["apiKey"] = "offline"
    return json.dumps({"providers": {"offline": provider}}, indent=2)


def declared_models_json(spec: RunSpec) -> str:
    """A provider of the scenario's own (`[providers.<name>]`), at the run's recording proxy,
    with the one model the cell names, described as the declaration says. An OpenAI server's
    API lives under /v1 of its origin; pi adds /v1/messages to an Anthropic baseUrl itself."""
    if not spec.model_base_url:
        raise HarnessFault(f"provider {spec.provider} needs the URL of its recording proxy")
    declared = spec.endpoint
    model = catalogue_model(spec, declared.context_window, declared.max_tokens)
    openai = declared.api == "openai-completions"
    base = f"{spec.model_base_url}/v1" if openai else spec.model_base_url
    provider = catalogue_provider(base, declared.api, model)
    return json.dumps({"providers": {spec.provider: provider}}, indent=2)


def catalogue_model(spec: RunSpec, context_window: int, max_tokens: int) -> dict:
    return {
        "id": spec.model,
        "name": spec.model,
        # What agentab was told of the model, as a real catalogue would say it: pi silently
        # drops --thinking for a model that cannot reason (and the receipt then says so).
        "reasoning": spec.model_can_reason,
        "input": ["text"],
        "contextWindow": context_window,
        "maxTokens": max_tokens,
        "cost": offline_cost(spec.model_price),
    }


def catalogue_provider(base_url: str, api: str, model: dict) -> dict:
    """A models.json provider of agentab's writing. Its key is a placeholder: these servers
    take none, and a real key never reaches a harness (the recording proxy holds it)."""
    provider = {"baseUrl": base_url, "api": api, "apiKey": "agentab", "models": [model]}
    if api == "openai-completions":
        # What llama.cpp's server, vLLM, Ollama and the offline model accept: reasoning_effort,
        # no developer role, no `store`.
        provider["compat"] = {
            "supportsReasoningEffort": True,
            "thinkingFormat": "openai",
            "supportsDeveloperRole": False,
            "supportsStore": False,
        }
    return provider


# The path each provider's API lives under at its origin: pi's baseUrl for it includes it.
PROVIDER_BASE_PATHS = {"openai": "/v1", "openrouter": "/api/v1", "groq": "/openai/v1"}
PROVIDER_BASE_PATHS.update({"xai": "/v1", "mistral": "/v1", "google": "/v1beta"})


def proxied_models_json(spec: RunSpec) -> str:
    """A built-in provider pointed at the run's recording proxy (pi: a provider entry with
    only `baseUrl` changes that provider, its models and their settings stay pi's own)."""
    base = spec.model_base_url + PROVIDER_BASE_PATHS.get(spec.provider, "")
    return json.dumps({"providers": {spec.provider: {"baseUrl": base}}}, indent=2)


# A tool an extension declares: `registerTool({ name: "brick_probe", … })`, or the same with
# the object wrapped in a helper (`registerTool(defineTool({ name: … }))`), as pi's API has it.
DECLARED_TOOL = re.compile(
    r"""registerTool\s*\(\s*(?:[\w.]+\s*\(\s*)?\{[^{}]*?\bname\s*:\s*["']([\w.-]+)["']"""
)


def extension_source(path: Path, limit: int = 1_000_000) -> str:
    """The text of an extension file, or of the files of an extension folder, up to `limit`
    characters."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    text = ""
    for file in files:
        try:
            text += file.read_text(encoding="utf-8", errors="replace")[: limit - len(text)]
        except OSError:
            continue
        if len(text) >= limit:
            break
    return text


def listed(value) -> list:
    return value if isinstance(value, list) else []


# ---------------------------------------------------------------------------- the stream


def read_pi_stream(path: Path) -> StreamFacts:
    """Facts of a `pi --mode json` stream; an attempt pi retried does not count as the outcome."""
    facts = StreamFacts()
    cost = 0.0
    costed = False
    for _, event in stream_facts_events(path, facts.errors):
        kind = event.get("type")
        if kind == "tool_execution_start":
            name = event.get("toolName", "?")
            facts.tool_calls[name] = facts.tool_calls.get(name, 0) + 1
        elif kind == "agent_settled":
            facts.settled = True
        elif kind == "auto_retry_end" and not event.get("success", True):
            facts.errors.append(str(event.get("finalError", "retries exhausted")))
        elif kind == "message_end" and (event.get("message") or {}).get("role") == "assistant":
            message = event["message"]
            usage = message.get("usage") or {}
            for ours, theirs in TOKEN_FIELDS.items():
                facts.tokens[ours] += int(usage.get(theirs) or 0)
            if isinstance(usage.get("cost"), dict) and "total" in usage["cost"]:
                cost += float(usage["cost"]["total"])
                costed = True
            facts.stop_reason = message.get("stopReason", "")
            if message.get("thinkingLevel"):
                facts.thinking_applied = str(message["thinkingLevel"])
            if facts.stop_reason in ("error", "aborted"):
                error = str(message.get("errorMessage") or facts.stop_reason)
                facts.errors.append(error)
                facts.error_status = leading_status(error)
            else:
                facts.turns += 1
                facts.final_message = message_text(message)
    facts.cost_usd = cost if costed else None
    return facts


def leading_status(message: str) -> int | None:
    """pi writes a provider's error as `<HTTP status>: <body>`."""
    found = re.match(r"\s*(\d{3})\b", message)
    return int(found.group(1)) if found else None


TOOL_KINDS = {"read": "read", "edit": "edit", "write": "write", "bash": "run"}


def pi_transcript(path: Path) -> list[dict]:
    """The conversation of a pi stream: user and assistant messages, tool calls, tool results."""
    lines = []
    for event in stream_events(path):
        message = event.get("message") or {}
        if event.get("type") != "message_end":
            continue
        role = message.get("role")
        if role == "user":
            lines.append(transcript_message("user", message_text(message)))
        elif role == "assistant":
            calls = [
                transcript_call(
                    block.get("id", ""),
                    block.get("name", ""),
                    TOOL_KINDS.get(block.get("name", ""), "other"),
                    block.get("arguments") or {},
                    (block.get("arguments") or {}).get("command")
                    if block.get("name") == "bash"
                    else None,
                )
                for block in message.get("content") or []
                if isinstance(block, dict) and block.get("type") == "toolCall"
            ]
            usage = message.get("usage") or {}
            lines.append(
                transcript_message(
                    "assistant",
                    message_text(message),
                    calls,
                    {
                        "input": int(usage.get("input") or 0),
                        "output": int(usage.get("output") or 0),
                    },
                )
            )
        elif role == "toolResult":
            lines.append(
                transcript_result(
                    message.get("toolCallId", ""),
                    message.get("toolName", ""),
                    message_text(message),
                    bool(message.get("isError")),
                )
            )
    return lines


TOKEN_FIELDS = {"input": "input", "output": "output", "cache_read": "cacheRead"}
TOKEN_FIELDS["cache_write"] = "cacheWrite"


def message_text(message: dict) -> str:
    blocks = message.get("content") or []
    if isinstance(blocks, str):
        return blocks
    return "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text").strip()


HARNESS = PiHarness
