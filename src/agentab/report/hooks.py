"""What the workflow asks about the report and the progress line (rules/report.smk).

Functions of the plan, so that the rules file holds rules only. They read the plan through
`results_dir`, `runs` and `run_dir` alone.
"""

from __future__ import annotations

from pathlib import Path

from agentab.report.builder import INDEX
from agentab.workflow.progress import Progress, outputs_due, start_progress
from agentab.workflow.progress import failure_advice as advice_from_logs
from agentab.workflow.storage import folders_written

# The modules that write the report (not the workflow hooks, not `redo`).
REPORT_MODULES = (
    "builder",
    "conversation",
    "metric_filter",
    "receipt",
    "run_page",
    "runs",
    "sources",
)
_RUNNING: list[Progress] = []
__all__ = [
    "failure_advice",
    "report_code",
    "report_targets",
    "start_run_progress",
    "stop_run_progress",
]


def report_targets(plan) -> list[str]:
    """Each scenario's report index: a default target of the workflow, after the synthesis."""
    return [str(plan.layout.results(name).report / INDEX) for name in plan.scenarios]


def report_code() -> list[str]:
    """The files that decide the report: editing one rebuilds the report and nothing else."""
    package = Path(__file__).resolve().parent
    templates = package.parent / "templates" / "report"
    modules = [package / f"{name}.py" for name in REPORT_MODULES]
    return sorted(str(path) for path in [*modules, *templates.glob("*.j2")])


def run_folders(plan) -> list[Path]:
    return [
        plan.layout.run(name, cell, rep).path
        for name in plan.scenarios
        for cell, rep in plan.runs(name)
    ]


def start_run_progress(plan, snakemake_workflow=None) -> None:
    """From the Snakefile's `onstart:`: print `12/40 runs · 0 faults · …` as runs finish. A run
    whose measures this invocation makes again counts once they are made."""
    redone = outputs_due(snakemake_workflow, "measure_run")
    budgets = [
        (plan.layout.results(name).budget_ledger, scenario.budget_usd)
        for name, scenario in plan.scenarios.items()
        if scenario.budget_usd is not None
    ]
    waves = [
        (plan.layout.results(name).wave_decision(1).parent, scenario.waves)
        for name, scenario in plan.scenarios.items()
        if scenario.sequential
    ]
    _RUNNING.append(start_progress(run_folders(plan), redone=redone, budgets=budgets, waves=waves))


def failure_advice(log, plan) -> str:
    """From `onerror:`: the invocation's last line, what to do."""
    return advice_from_logs(log, folders_written(plan))


def stop_run_progress() -> None:
    """From `onsuccess:` and `onerror:`: the last line, and the thread ends."""
    while _RUNNING:
        _RUNNING.pop().stop()
