"""How many agents run against one model server at a time: what its declaration allows.

A server that answers one request at a time (llama-server without --parallel) queues a second
run's requests behind the first's; with enough of them, a run spends its timeout waiting and
ends as the agent's `failed: timeout`, for the machine's load. A scenario says what the server
can take, `[providers.<name>] concurrency = N`, and the workflow makes that a Snakemake
resource, `provider_<name>`: each agent run against the server holds one, and Snakemake starts
no job beyond the cap (on a cluster too: its scheduler counts them over every node).

One server is one resource however many scenarios or names declare it (the same origin):
its cap is the smallest declared. A `--resources provider_<name>=N` on the command line can
only lower it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

PREFIX = "provider_"


@dataclass(frozen=True)
class ServerCap:
    resource: str  # provider_<name>: a Snakemake resource name
    most: int  # agents at once
    declared_by: tuple[str, ...]  # `<scenario>: [providers.<name>]`, for a person reading


def resource_name(provider: str) -> str:
    """`provider_<name>`, the name's other characters as `_` (a resource name is a word)."""
    return PREFIX + re.sub(r"\W", "_", provider)


def server_caps(scenarios: Iterable) -> dict[str, ServerCap]:
    """Each capped server's resource, by the server's origin."""
    caps: dict[str, ServerCap] = {}
    for scenario in scenarios:
        for cell in scenario.run_cells:
            provider = cell.agent.endpoint
            if provider is None or provider.concurrency is None:
                continue
            said = f"{scenario.name}: [providers.{provider.name}]"
            known = caps.get(provider.url)
            if known is None:
                caps[provider.url] = ServerCap(
                    resource_name(provider.name), provider.concurrency, (said,)
                )
            elif said not in known.declared_by:
                caps[provider.url] = ServerCap(
                    known.resource,
                    min(known.most, provider.concurrency),
                    (*known.declared_by, said),
                )
    return caps


def cell_slots(scenarios: Iterable, caps: dict[str, ServerCap]) -> dict[tuple[str, str], str]:
    """(scenario, cell slug) -> the resource its agent runs hold, for the cells with one."""
    return {
        (scenario.name, cell.slug): caps[cell.agent.endpoint.url].resource
        for scenario in scenarios
        for cell in scenario.run_cells
        if cell.agent.endpoint is not None and cell.agent.endpoint.url in caps
    }


def cap_resources(snakemake_workflow, caps: dict[str, ServerCap]) -> list[str]:
    """Tell Snakemake each server's cap (the lower of the declared and a command line's);
    one line per server, for the person starting the workflow."""
    lines = []
    for cap in caps.values():
        given = snakemake_workflow.global_resources.get(cap.resource).value
        most = cap.most if not isinstance(given, int) else min(given, cap.most)
        snakemake_workflow.register_resource(cap.resource, most)
        lines.append(
            f"agentab: at most {most} agent run{'s' * (most != 1)} at a time against "
            f"{', '.join(cap.declared_by)} (its concurrency)"
        )
    return lines
