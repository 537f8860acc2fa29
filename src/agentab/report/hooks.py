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
    "synthesize_what_ran",
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


def synthesize_what_ran(plan) -> list[str]:
    """From the Snakefile's `onerror:`: one run's failure never stops the synthesis of the
    others. The synthesis rule needs every run's measures.json, so a run that faults on every
    attempt (or a job stopped on an error) would leave a scenario without any synthesis or
    report although its other runs were measured. Each results folder whose synthesis is
    missing or older than one of its measures.json gets one from the runs measured so far (its
    missing runs listed in it, not recorded as a look), and its report; a line says so."""
    from agentab.errors import AgentabError
    from agentab.report.builder import build_report
    from agentab.synthesis.synthesize import synthesize
    from agentab.workflow.stopping import was_stopped

    if was_stopped():  # a stop is a stop: its next invocation makes the synthesis
        return []
    lines = []
    for name in plan.scenarios:
        folder = plan.layout.results(name).path
        measured = [path.stat().st_mtime for path in folder.glob("runs/*/r*/measures.json")]
        synthesis = folder / "synthesis.md"
        if not measured or (synthesis.exists() and synthesis.stat().st_mtime >= max(measured)):
            continue
        try:
            result = synthesize(folder, look=False)
            build_report(folder)
        except (AgentabError, OSError) as error:
            lines.append(f"agentab: {name}: no synthesis of the runs measured so far: {error}")
            continue
        except Exception as error:  # noqa: BLE001 - a workflow's last words are never a traceback
            lines.append(
                f"agentab: {name}: no synthesis of the runs measured so far ({error!r}); "
                f"`agentab synthesize {folder}` says more"
            )
            continue
        missing = len(result.missing)
        lines.append(
            f"agentab: {name}: {synthesis} and its report written from the {len(result.runs)} "
            f"runs measured so far ({missing} missing, listed in it); running the same command "
            "again completes it"
        )
    return lines
