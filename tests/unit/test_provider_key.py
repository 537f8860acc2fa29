"""A real provider's key: from the credentials file, into the agent's constructed environment
only, and shown as <secret> wherever the run is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.harnesses.base import Installation, RunSpec
from agentab.harnesses.pi import PiHarness
from agentab.run.model_choice import provider_api_key
from agentab.scenario.providers import DeclaredProvider
from agentab.scenario.types import AgentConfig


def agent(provider: str, endpoint: DeclaredProvider | None = None) -> AgentConfig:
    return AgentConfig("pi", "1.6.0", provider, "m", "off", 60.0, endpoint)


def spec(tmp_path: Path, provider: str, api_key: str | None) -> RunSpec:
    return RunSpec(
        clone=tmp_path / "clone",
        scratch=tmp_path / "scratch",
        prompt="Fix it.",
        provider=provider,
        model="claude-sonnet-4-5-20250929",
        thinking="off",
        timeout_s=60.0,
        api_key=api_key,
    )


def test_the_key_comes_from_the_credentials_file(tmp_path: Path) -> None:
    credentials = tmp_path / "credentials.toml"
    credentials.write_text('[anthropic]\napi_key = "sk-test-123"\n')
    assert provider_api_key(agent("anthropic"), credentials) == "sk-test-123"
    assert provider_api_key(agent("offline"), None) is None
    with pytest.raises(AgentabError, match="credentials"):
        provider_api_key(agent("anthropic"), None)


def test_a_declared_server_takes_a_key_only_when_it_asks_for_one(tmp_path: Path) -> None:
    credentials = tmp_path / "credentials.toml"
    credentials.write_text('[vllm]\napi_key = "token-abc"\n')
    keyless = DeclaredProvider("local", "http://127.0.0.1:8080", "openai-completions")
    assert provider_api_key(agent("local", keyless), None) is None
    keyed = DeclaredProvider("vllm", "http://127.0.0.1:8000", "openai-completions", key=True)
    assert provider_api_key(agent("vllm", keyed), credentials) == "token-abc"


def test_the_key_reaches_pi_in_its_environment_and_is_recorded_as_secret(tmp_path: Path) -> None:
    installation = Installation("pi", "1.6.0", tmp_path, tmp_path / "cli.js")
    invocation = PiHarness().prepare(spec(tmp_path, "anthropic", "sk-test-123"), installation)
    assert invocation.env["ANTHROPIC_API_KEY"] == "sk-test-123"
    assert "sk-test-123" not in " ".join(invocation.argv)
    assert invocation.env_for_record()["ANTHROPIC_API_KEY"] == "<secret>"
    assert "sk-test-123" not in str(invocation.env_for_record())
