"""The budget: `[protocol] budget_usd`, what a scenario's runs may spend (docs/workflow.md).

One home for every part of it, in the order a run meets them: `rule` the load-time rule (every
cell's runs have a cost agentab can tell), `ledger` the ledger of a results folder
(`budget.json` under `flock`: spent, reservations in flight, runs not started), `costs` a run's
cost (reported, or tokens × a price) and what a request log says was used, `spending` the run
step's side (reserve before the agent starts, settle after, the files of a run refused), and
`on_start` what the workflow does with the ledger when it starts and ends.

It sits below the scenario (whose loader applies its rule) and above the harnesses and the
offline model (whose prices it reads). This public interface is what the rest of agentab
imports of it.
"""

from agentab.budget.ledger import BUDGET_REACHED, NOT_STARTED, Ledger, read_ledger, usd

__all__ = ["BUDGET_REACHED", "NOT_STARTED", "Ledger", "read_ledger", "usd"]
