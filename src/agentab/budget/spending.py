"""A run step's side of the budget: ask the ledger before the agent starts, settle after.

A run the budget refuses is not a failed job (Snakemake would stop on it, or retry it forever):
its step ends with exit 0 and leaves the run's files, made to say so. `run.json` has the
outcome `not-started` with the reason, the other declared outputs are empty, its validators
score nothing and its measures.json has the status `not-started`. The synthesis, `agentab runs`
and the report list it among the missing runs, `not started: budget reached`; the ledger lists
it too, and the next workflow start removes its files when the budget has room for it by then
(`agentab.budget.on_start`), so that the workflow runs it.
"""

from __future__ import annotations

from pathlib import Path

from agentab.budget.costs import attempt_cost, attempt_logs, model_price
from agentab.budget.ledger import NOT_STARTED, Decision, Ledger
from agentab.files import folder_file_hashes, results_secret, write_json, write_sealed_json
from agentab.layout import RunFolder, run_id
from agentab.runfiles import RECEIPT_VERSION, RUN_VERSION, ReceiptJson, RunJson


def ledger_for(scenario, results_dir: Path) -> Ledger | None:
    """The scenario's ledger, or None when it has no budget."""
    budget = scenario.budget_usd
    if budget is None:
        return None
    return Ledger(results_dir, budget, scenario.run_count)


class RunSpending:
    """One attempt's reservation: `start()` asks, `ran(record)` or `ended()` settles."""

    def __init__(self, scenario, cell, rep: int, files):
        self.scenario, self.cell, self.rep, self.files = scenario, cell, rep, files
        self.run = run_id(cell.slug, rep)
        self.ledger = ledger_for(scenario, RunFolder(files.folder).results.path)
        self.decision: Decision | None = None
        self.logs_before: set[Path] = set()

    def start(self) -> bool:
        """Whether the run may start; without a budget it always may."""
        if self.ledger is None:
            return True
        self.logs_before = attempt_logs(self.files.earlier_attempts)
        self.decision = self.ledger.reserve(self.run, self.cell.slug)
        return self.decision.started

    def ran(self, record: dict) -> None:
        """The run has its outcome: what it cost replaces its reservation."""
        if self.ledger is None:
            return
        cost = record.get("cost") or {}
        usd = cost.get("usd")
        if usd is None and record.get("provider") == "offline":
            usd, cost = 0.0, {"how": "the offline model, unpriced, costs nothing"}
        self.ledger.settle(self.run, usd, cost.get("how"), "outcome")

    def ended(self) -> None:
        """The attempt ended without an outcome (a fault, a stop): what its requests cost."""
        if self.ledger is None or self.decision is None or not self.decision.started:
            return
        agent = self.cell.agent
        price = model_price(self.scenario.dir, agent)
        usd, how = attempt_cost(self.files.earlier_attempts, self.logs_before, price)
        if usd is None and agent.provider == "offline":
            usd, how = 0.0, "the offline model, unpriced, costs nothing"
        self.ledger.settle(self.run, usd, how, "fault")

    def refuse(self) -> RunJson:
        """Write the files of a run the budget did not start; return its record. The caller
        has ended any stale twin first (`run.process.end_stale_twin`): an agent a killed
        workflow left must not spend on."""
        files = self.files
        files.folder.mkdir(parents=True, exist_ok=True)
        for path in (files.stream, files.transcript, files.patch, files.model_requests):
            path.write_bytes(b"")
        receipt: ReceiptJson = {
            "schema_version": RECEIPT_VERSION,
            "requests": 0,
            "delivered": None,
            "problems": [],
        }
        write_json(receipt, files.receipt)
        decision = self.decision
        record: RunJson = {
            "schema_version": RUN_VERSION,
            "scenario": self.scenario.name,
            "cell": self.cell.name,
            "slug": self.cell.slug,
            "rep": self.rep,
            "run": self.run,
            "harness": self.cell.agent.harness,
            "harness_version": self.cell.agent.version,
            "provider": self.cell.agent.provider,
            "model": self.cell.agent.model,
            "thinking": self.cell.agent.thinking,
            "outcome": {"status": NOT_STARTED, "reason": decision.reason()},
            "budget": {
                "budget_usd": decision.budget_usd,
                "spent_usd": decision.spent_usd,
                "in_flight_usd": decision.in_flight_usd,
                "estimate_usd": decision.estimate_usd,
                "estimate_from": decision.estimate_from,
            },
            "cost": {"usd": 0.0, "how": "not started"},
            "facts": {},
        }
        record["files"] = folder_file_hashes(files.folder, exclude={files.record.name})
        secret = results_secret(RunFolder(files.folder).results.secret)
        write_sealed_json(record, files.record, secret)
        return record
