"""Model servers a scenario declares by name: `[providers.<name>]`, a local (or any) server
that speaks OpenAI chat completions or Anthropic messages.

Ollama, vLLM and llama.cpp's server are reached this way. What decides what is measured is in
the scenario, never in an environment variable or the machine's config: the server's origin,
the API it speaks, and what the harness is told of the model (its context window, its longest
reply, whether it reasons, its price). A cell names the provider in `agent.provider`, and the
declaration travels with the cell's run configuration: changing it reruns the cell's runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from agentab.prices import Price

# Names a declaration cannot take: the offline model, and the providers agentab reaches at
# their own endpoints (`run/recording_proxy.DEFAULT_ENDPOINTS`), whose models a harness knows.
RESERVED = frozenset(
    {"offline", "anthropic", "openai", "google", "openrouter", "groq", "mistral", "xai"}
)
OPENAI = "openai-completions"
ANTHROPIC = "anthropic-messages"
ORIGIN = re.compile(r"^https?://[^/?#\s]+$")
DEFAULT_CONTEXT_WINDOW = 8192
DEFAULT_MAX_TOKENS = 1024


@dataclass(frozen=True)
class DeclaredProvider:
    """One `[providers.<name>]` table, as read."""

    name: str
    url: str  # the server's origin: http://127.0.0.1:8080, without /v1
    api: str  # OPENAI or ANTHROPIC
    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_tokens: int = DEFAULT_MAX_TOKENS
    reasoning: bool = False
    price_input: float = 0.0  # USD per million tokens
    price_output: float = 0.0
    # It asks for a key (vLLM's --api-key): the credentials file's [<name>] api_key, put on
    # each request by the recording proxy as for any provider. Most local servers take none.
    key: bool = False
    # How many requests the server serves at once (llama-server's --parallel, vLLM's
    # --max-num-seqs): the workflow runs at most this many agents against it at a time, so no
    # run's requests wait in its queue behind another run's. None: as many as the workflow
    # runs. Not part of `as_dict`: it changes when runs happen, never what a run is.
    concurrency: int | None = None

    @property
    def price(self) -> Price:
        """What its tokens cost: the declared price, or nothing."""
        return Price(self.price_input, self.price_output, f"the scenario's [providers.{self.name}]")

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "url": self.url,
            "api": self.api,
            "context_window": self.context_window,
            "max_tokens": self.max_tokens,
            "reasoning": self.reasoning,
            "price": {"input": self.price_input, "output": self.price_output},
            "key": self.key,
        }


def origin_problem(url: str) -> str | None:
    """Why `url` is not a server's origin (scheme, host, port; no path), or None."""
    if ORIGIN.match(url.rstrip("/")):
        return None
    if re.match(r"^https?://[^/?#\s]+/", url):
        return f"`{url}` has a path; agentab adds the API's own (/v1/…) itself"
    return f"`{url}` is not an http(s) origin"


def read_providers(data: dict, sink) -> dict[str, DeclaredProvider]:
    """The scenario's declared providers by name; each problem added to `sink` by its key."""
    declared = {}
    for name, raw in (data.get("providers") or {}).items():
        key = f"providers.{name}"
        if name in RESERVED:
            sink.add(
                key,
                f"`{name}` is a provider agentab knows already (its models and endpoint are "
                "the harness's own)",
                f"give the server another name, e.g. [providers.local-{name}]",
            )
            continue
        found = origin_problem(raw["url"])
        if found:
            sink.add(
                f"{key}.url", found, 'write the origin only, e.g. url = "http://127.0.0.1:8080"'
            )
            continue
        price = raw.get("price") or {}
        declared[name] = DeclaredProvider(
            name=name,
            url=raw["url"].rstrip("/"),
            api=raw["api"],
            context_window=raw.get("context_window", DEFAULT_CONTEXT_WINDOW),
            max_tokens=raw.get("max_tokens", DEFAULT_MAX_TOKENS),
            reasoning=raw.get("reasoning", False),
            price_input=float(price.get("input", 0.0)),
            price_output=float(price.get("output", 0.0)),
            key=raw.get("key", False),
            concurrency=raw.get("concurrency"),
        )
    return declared


def on_declared_providers(cells: list, declared: dict[str, DeclaredProvider], sink) -> list:
    """The cells, each whose provider is declared carrying its declaration (`agent.endpoint`);
    a declaration no cell uses, or a harness that cannot speak its API, is a problem."""
    from agentab.harnesses import adapter_class, harness_names

    known = harness_names()
    used = set()
    placed = []
    for cell in cells:
        provider = declared.get(cell.agent.provider)
        if provider is None:
            placed.append(cell)
            continue
        used.add(provider.name)
        apis = (
            adapter_class(cell.agent.harness).declared_apis if cell.agent.harness in known else ()
        )
        if cell.agent.harness in known and provider.api not in apis:
            sink.add(
                f"providers.{provider.name}.api",
                f"cell `{cell.name}`: {cell.agent.harness} cannot be pointed at a server that "
                f"speaks {provider.api}",
                f"use a harness that speaks it (pi speaks {OPENAI} and {ANTHROPIC}, "
                f"claude-code {ANTHROPIC})",
            )
        if not provider.reasoning and cell.agent.thinking != "off":
            sink.add(
                f"providers.{provider.name}.reasoning",
                f"cell `{cell.name}`: thinking {cell.agent.thinking!r} on a model declared "
                "unable to reason (reasoning = false): a harness drops the level silently",
                'set thinking = "off" for this cell, or reasoning = true if the model reasons',
            )
        placed.append(replace(cell, agent=replace(cell.agent, endpoint=provider)))
    for name in sorted(set(declared) - used):
        sink.add(
            f"providers.{name}",
            f"no cell's agent.provider is `{name}`: the declaration changes nothing",
            f'set provider = "{name}" in [agent] or in a delta, or remove [providers.{name}]',
        )
    return placed
