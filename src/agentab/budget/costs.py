"""A run's cost in USD: what its harness reported, or its tokens × a price.

pi and Claude Code state each run's cost in their stream; Codex and Gemini CLI state tokens
only. Every run is priced the same way so that a budget counts them all: the harness's figure
when it gives one, else the tokens × the model's price (agentab's dated price table, or, on the
offline model, the policy's own `price`). The run's record says which (`run.json` → `cost`).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentab.offline_model.policy import load_policy
from agentab.prices import Price, table_price

REPORTED = "reported by the harness"


def policy_source(scenario_dir: Path, model: str) -> str:
    """A shipped policy by name, or a policy file named relative to the scenario."""
    return str((Path(scenario_dir) / model).resolve()) if model.endswith(".toml") else model


def model_price(scenario_dir: Path, agent) -> Price | None:
    """What a model's tokens cost: the offline policy's price (None: it costs nothing), a
    declared server's (`[providers.<name>] price`, else nothing), or the price table's (None:
    unknown)."""
    if agent.endpoint is not None:
        return agent.endpoint.price
    if agent.provider == "offline":
        return load_policy(policy_source(scenario_dir, agent.model)).price
    return table_price(agent.model)


def run_cost(reported: float | None, tokens: dict, price: Price | None):
    """(USD, how it is known), or (None, None) when nobody can tell."""
    if reported is not None:
        return float(reported), REPORTED
    if price is not None and any(isinstance(v, int) and v for v in tokens.values()):
        return price.cost_usd(tokens), f"tokens × {price.source}"
    return None, None


def attempt_logs(earlier_attempts: Path) -> set[Path]:
    """The request logs of the attempts kept apart (`earlier-attempts/attempt-N-…`)."""
    return set(Path(earlier_attempts).glob("attempt-*"))


def attempt_cost(earlier_attempts: Path, before: set[Path], price: Price | None):
    """What an attempt that ended without an outcome (a fault, a stop) cost: the replies its
    request log recorded (the logs kept apart that were not there `before` it), priced like a
    run."""
    usage: dict = {}
    for log in attempt_logs(earlier_attempts) - before:
        for key, value in stated_usage(log).items():
            usage[key] = usage.get(key, 0) + value
    if not usage:
        return 0.0, "no reply was recorded"
    tokens = {k: v for k, v in usage.items() if k in ("input", "output", "cache_read")}
    return run_cost(usage.get("cost_usd"), tokens, price)


def stated_usage(log: Path) -> dict:
    """Tokens (and cost, where a provider states one) summed over the replies in a request log
    (`model-requests.jsonl`), read as data."""
    total: dict = {}
    if not Path(log).exists():
        return total
    for line in Path(log).read_text(encoding="utf-8").splitlines():
        try:
            usage = (json.loads(line).get("reply") or {}).get("usage") or {}
        except (ValueError, AttributeError):
            continue
        for key, value in usage.items():
            if isinstance(value, int | float):
                total[key] = total.get(key, 0) + value
    return total
