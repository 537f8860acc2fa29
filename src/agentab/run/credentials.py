"""API keys, read from the credentials file that config/config.yaml names.

Never from an environment variable: a key inherited from a shell is invisible in the archive
and differs between a laptop and a cluster node. The key is handed to the SDK in memory and
written nowhere.

The file is TOML, one table per provider::

    [anthropic]
    api_key = "sk-ant-..."
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from agentab.errors import AgentabError, problem

CONFIG_KEY = "credentials"


def read_api_key(credentials_file: Path | None, provider: str = "anthropic") -> str:
    """The API key of ``provider``; an AgentabError naming the file, the key and the fix."""
    if credentials_file is None:
        raise AgentabError(
            problem(
                "config/config.yaml",
                CONFIG_KEY,
                f"no credentials file is configured, and a run or a judge needs a {provider} API key",
                fix=f"add `{CONFIG_KEY}: credentials.toml` to config/config.yaml and write "
                f'[{provider}] api_key = "..." in that file',
            )
        )
    path = Path(credentials_file)
    if not path.is_file():
        raise AgentabError(
            problem(
                path,
                CONFIG_KEY,
                "the credentials file named in config/config.yaml does not exist",
                fix=f'create it with [{provider}] api_key = "...", or point `{CONFIG_KEY}` '
                "in config/config.yaml at the right file",
            )
        )
    try:
        tables = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        # The decoder's message quotes no value, so the key cannot leak through it.
        raise AgentabError(
            problem(
                path,
                "",
                f"is not valid TOML ({error})",
                fix=f'write it as [{provider}] then api_key = "..."',
            )
        ) from None
    table = tables.get(provider)
    key = table.get("api_key") if isinstance(table, dict) else None
    if not isinstance(key, str) or not key.strip():
        raise AgentabError(
            problem(
                path,
                f"{provider}.api_key",
                f"no {provider} API key in the credentials file",
                fix=f'add the lines [{provider}] and api_key = "..." to {path}',
            )
        )
    return key.strip()
