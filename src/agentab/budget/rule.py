"""Load-time rule of `[protocol] budget_usd`: every run's cost must be knowable.

A budget counts what each run cost: the harness's own figure (pi, Claude Code), else the run's
tokens × the model's price (agentab.prices; on the offline model, the policy's `price`). A cell
whose harness states no cost and whose model has no known price would be counted at a guess,
so a scenario with a budget is refused at load, naming the cell, the model and the fix.
"""

from __future__ import annotations

from agentab.prices import TABLE_DATE, table_price


def check_budget(data: dict, cells: list, sink) -> None:
    """With a budget, each cell's runs have a cost agentab can tell. `cells`: the scenario's
    cells; `sink`: where a problem is added (the loader's `Collector`), by key."""
    if (data.get("protocol") or {}).get("budget_usd") is None:
        return
    # Late: `agentab synthesize` loads a frozen scenario and never pays for the harnesses.
    from agentab.harnesses import adapter_class, harness_names

    known = harness_names()
    refused: set[tuple[str, str]] = set()
    for cell in cells:
        agent = cell.agent
        if agent.provider == "offline" or agent.endpoint or agent.harness not in known:
            continue  # the offline model costs its policy's price, a declared server its own
        if adapter_class(agent.harness).reports_cost or table_price(agent.model) is not None:
            continue
        if (agent.harness, agent.model) in refused:
            continue
        refused.add((agent.harness, agent.model))
        sink.add(
            "protocol.budget_usd",
            f"cell `{cell.name}`: {agent.harness} reports no cost, and agentab's price table "
            f"(agentab/prices.py, {TABLE_DATE}) has no price for the model `{agent.model}`: "
            "its runs could not be counted against the budget",
            "use a model the table prices (listed in docs/scenario.md), a "
            "harness that reports its cost (pi, claude-code), or remove budget_usd",
        )
