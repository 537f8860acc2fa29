"""Which model a run talks to, and how: the offline model's seed, the provider's key, the model
as the harness is told it (name, whether it reasons, its price), and where the recording proxy
forwards."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from agentab.harnesses.base import RunSpec
from agentab.offline_model.policy import load_policy
from agentab.prices import table_price
from agentab.run.credentials import read_api_key
from agentab.run.frozen_inputs import frozen_copy
from agentab.run.recording_proxy import endpoint_for


def offline_seed(scenario: str, slug: str, rep: int) -> int:
    """The offline model's seed of one run: the same run always gets the same draws."""
    digest = hashlib.sha256(f"{scenario}\0{slug}\0{rep}".encode()).hexdigest()
    return int(digest[:12], 16)


def provider_api_key(agent, credentials: Path | None) -> str | None:
    """The provider's key from the credentials file; the offline model, and a declared server
    that asks for none, need none."""
    if not agent.needs_key:
        return None
    return read_api_key(credentials, agent.provider)


def told_model(cell, spec: RunSpec, inputs: tuple, store: Path):
    """The spec with the model as the harness is told it, the model's price, and the offline
    policy (None for a real provider): the policy's frozen copy in `store`, checked against the
    hash the scenario had when it was loaded, never the file in the scenario's folder."""
    declared = cell.agent.endpoint
    if declared is not None:  # described to the harness as the scenario declares it
        price = declared.price
        spec = replace(
            spec,
            model_can_reason=declared.reasoning,
            model_price={"input": price.input, "output": price.output},
        )
        return spec, price, None
    if cell.agent.provider != "offline":
        return spec, table_price(cell.agent.model), None
    (policy_input,) = inputs
    # A policy file by its frozen copy (named as the file: its stem is the model's name); a
    # shipped policy by its name.
    policy = policy_input.rel if policy_input.shipped else str(frozen_copy(policy_input, store))
    # The model id the harness is told: the policy's name (a policy file names its model by its
    # stem), whether the model can reason, and what its tokens cost, as a real catalogue would.
    loaded = load_policy(policy)
    price = loaded.price
    spec = replace(
        spec,
        model=Path(policy).stem if policy.endswith(".toml") else policy,
        model_can_reason=bool(loaded.settings.get("reasoning", True)),
        model_price={"input": price.input, "output": price.output} if price else None,
    )
    return spec, price, policy


def provider_origin(agent, configured: dict[str, str]) -> str:
    """Where the run's recording proxy forwards: a declared server's url, else the provider's
    endpoint (`provider_endpoints` in the config, else its own)."""
    if agent.endpoint is not None:
        return agent.endpoint.url
    return endpoint_for(agent.provider, configured)
