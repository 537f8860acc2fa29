"""What `agentab check` says of a declared server (`[providers.<name>]`): that it answers, and
serves the model each cell names.

A local server that is not started, or started with another model, fails every run of its
cells, each after the harness's own retries. The check asks the server's model listing
(`GET /v1/models`, which llama.cpp's server, vLLM, Ollama and Anthropic's API all have) before
anything runs. `--no-server` skips it while the server is down on purpose.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from agentab.errors import Problem, problem

LISTING = "/v1/models"
TIMEOUT_S = 5.0
SKIP_HINT = "or check with --no-server while the server is down"


@dataclass(frozen=True)
class Listing:
    """One server's answer: the model names it serves, or why there are none."""

    models: frozenset[str] = frozenset()
    trouble: str = ""


def served_models(url: str, timeout_s: float = TIMEOUT_S) -> Listing:
    """The names `url`'s server answers to: each listed model's `id`, and its `aliases` and
    `name` where the server gives them (llama.cpp's server and Ollama do)."""
    request = urllib.request.Request(url + LISTING, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:  # noqa: S310 (http(s) only, checked at load)
            body = json.loads(reply.read(1_000_000))
    except urllib.error.HTTPError as error:
        return Listing(trouble=f"GET {url}{LISTING} answered HTTP {error.code}")
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        return Listing(trouble=f"no server answers at {url} ({reason})")
    except ValueError:
        return Listing(trouble=f"GET {url}{LISTING} answered something that is not JSON")
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return Listing(trouble=f"GET {url}{LISTING} lists no models (no `data` list)")
    names = set()
    for entry in entries:
        if isinstance(entry, dict):
            names.update(str(entry[k]) for k in ("id", "name") if entry.get(k))
            names.update(str(alias) for alias in entry.get("aliases") or [])
    return Listing(frozenset(names))


def server_check(scenario) -> tuple[list[Problem], list[str]]:
    """The problems of the scenario's declared servers, and a line for each that answered."""
    problems: list[Problem] = []
    lines: list[str] = []
    asked: dict = {}  # a server's name, and (its name, a model), once each
    for cell in scenario.cells:
        declared = cell.agent.endpoint
        if declared is None or (declared.name, cell.agent.model) in asked:
            continue
        if declared.name not in asked:
            asked[declared.name] = listing = served_models(declared.url)
            if listing.trouble:
                problems.append(
                    problem(
                        scenario.path,
                        f"providers.{declared.name}.url",
                        listing.trouble,
                        f"start the server (docs/local-models.md), correct the url, {SKIP_HINT}",
                    )
                )
            else:
                shown = ", ".join(sorted(listing.models)) or "none"
                lines.append(f"server      {declared.name} at {declared.url} serves: {shown}")
        listing = asked[declared.name, cell.agent.model] = asked[declared.name]
        if not listing.trouble and cell.agent.model not in listing.models:
            problems.append(
                problem(
                    scenario.path,
                    "agent.model",
                    f"cell `{cell.name}`: the server {declared.name} at {declared.url} serves no "
                    f"model `{cell.agent.model}`; it serves: "
                    f"{', '.join(sorted(listing.models)) or 'none'}",
                    f"name a model it serves, or start it with this one, {SKIP_HINT}",
                )
            )
    return problems, lines
