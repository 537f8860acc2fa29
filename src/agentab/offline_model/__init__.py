"""The offline model: a local model server in a provider's place, following a seeded policy.

`serve(policy, seed, log_path, harness=…)` runs it in a thread for the length of a `with` block
and yields its base URL (`http://127.0.0.1:<port>`; OpenAI clients append `/v1`, the Anthropic SDK
uses it as is). `python -m agentab.offline_model` runs it as a process. The policy format is in
`agentab.offline_model.policy`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentab.offline_model.local_server import DEFAULT_LOG_CAP, serving
from agentab.offline_model.policy import Policy, load_policy, shipped_policy_names
from agentab.offline_model.server import OfflineModelServer

__all__ = ["OfflineModelServer", "Policy", "load_policy", "serve", "shipped_policy_names"]


@contextmanager
def serve(
    policy: str,
    seed: int,
    log_path: Path,
    port: int = 0,
    log_cap: int = DEFAULT_LOG_CAP,
    harness: str | None = None,
) -> Iterator[str]:
    """Serve `policy` (a shipped name or a .toml path) on 127.0.0.1; yield its base URL. Its
    request log is capped at `log_cap` bytes (a run's: its disk). A policy's actions become
    calls of the tools of `harness` (its name, as a scenario's `[agent].harness` says it)."""
    server = OfflineModelServer(load_policy(policy), seed, Path(log_path), port, log_cap, harness)
    with serving(server, "offline-model") as base_url:
        yield base_url
