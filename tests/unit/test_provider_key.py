"""A real provider's key: from the credentials file, into the agent's constructed environment
only, and shown as <secret> wherever the run is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.harnesses.base import Installation, RunSpec
from agentab.harnesses.pi import PiHarness
from agentab.run.agent_run import provider_api_key


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
    assert provider_api_key("anthropic", credentials) == "sk-test-123"
    assert provider_api_key("offline", None) is None
    with pytest.raises(AgentabError, match="credentials"):
        provider_api_key("anthropic", None)


def test_the_key_reaches_pi_in_its_environment_and_is_recorded_as_secret(tmp_path: Path) -> None:
    installation = Installation("pi", "1.6.0", tmp_path, tmp_path / "cli.js")
    invocation = PiHarness().prepare(spec(tmp_path, "anthropic", "sk-test-123"), installation)
    assert invocation.env["ANTHROPIC_API_KEY"] == "sk-test-123"
    assert "sk-test-123" not in " ".join(invocation.argv)
    assert invocation.env_for_record()["ANTHROPIC_API_KEY"] == "<secret>"
    assert "sk-test-123" not in str(invocation.env_for_record())
