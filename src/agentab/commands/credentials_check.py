"""What `agentab check` says of the credentials file: every key the scenario will ask for.

A run against a real provider, and a judge against a real model, read their key from the
credentials file that config/config.yaml names. A misspelt table (`[anthropc]`) is found only
when the first run starts; `agentab check` reads the file as those runs will, so it is found
before anything runs. An offline scenario needs no key, and its check reads no file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

from agentab.errors import AgentabError, Problem, problem
from agentab.run.credentials import CONFIG_KEY, read_api_key

OFFLINE_JUDGE_PREFIX = "offline:"
# The judges' provider: the judge calls the Anthropic API (validators/judge.py).
JUDGE_PROVIDER = "anthropic"


def providers_needing_keys(scenario) -> dict[str, str]:
    """Each provider whose key the scenario's runs or judges will read, and who needs it."""
    needed: dict[str, str] = {}
    for cell in scenario.cells:
        if cell.agent.needs_key:
            needed.setdefault(cell.agent.provider, f"the agent of cell {cell.name!r}")
    for spec in scenario.validators.values():
        model = str(spec.options.get("model", ""))
        if spec.mode == "judge" and not model.startswith(OFFLINE_JUDGE_PREFIX):
            needed.setdefault(JUDGE_PROVIDER, f"the judge {spec.name!r}")
    return needed


def credentials_file(config: Path) -> Path | None:
    """The credentials file config/config.yaml names (relative to the working folder, as the
    workflow reads it), or None when it names none."""
    try:
        data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    except OSError as error:
        raise AgentabError(
            problem(
                config,
                "",
                f"cannot read the workflow's config ({error.strerror}), which names the "
                "credentials file",
                fix="run agentab check from the project folder, pass --config FILE, or "
                "--no-credentials to skip this check",
            )
        ) from None
    except yaml.YAMLError as error:
        raise AgentabError(
            problem(config, "", f"is not valid YAML ({error})", fix="correct the file")
        ) from None
    named = data.get(CONFIG_KEY) if isinstance(data, dict) else None
    return Path(named) if named else None


def credentials_problems(scenario, config: Path) -> list[Problem]:
    """Every key the scenario needs that the credentials file lacks, with its fix."""
    needed = providers_needing_keys(scenario)
    if not needed:
        return []
    path = credentials_file(config)
    problems = []
    for provider, who in needed.items():
        try:
            read_api_key(path, provider)
        except AgentabError as error:
            for found in error.problems:
                message = f"{found.message} (for {who}){_other_tables(path, provider)}"
                fix = f"{found.fix}; or check with --no-credentials while you edit"
                problems.append(problem(found.file, found.key, message, fix))
    return problems


def _other_tables(path: Path | None, provider: str) -> str:
    """`; the file has [anthropc]`: the misspelling a person is looking for."""
    try:
        tables = tomllib.loads(path.read_text(encoding="utf-8")) if path else {}
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    others = [f"[{name}]" for name in tables if name != provider]
    return f"; the file has {', '.join(others)}" if others else ""
