"""`build_report(results_dir)`: the static HTML report of a results folder.

`results/<name>/report/` holds `index.html` (the overview), `cells/<slug>.html` (one per cell,
listing its runs), `runs/<slug>/r<NN>.html` (one per run) and `style.css`. Every link is
relative and nothing is fetched: the folder opens from disk, offline, and moves with its
results folder. The overview never lists every run, so it stays readable with 10 000 of them.
"""

from __future__ import annotations

import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import jinja2
import markupsafe

from agentab.metrics import RATE
from agentab.rendering import template_environment
from agentab.report.metric_filter import runs_by_value
from agentab.report.run_page import OFFLINE_PROVIDER, diff_css, run_view
from agentab.report.runs import RUN_STATUSES, RunEntry, list_runs
from agentab.report.sources import (
    load_frozen_scenario,
    marked_task_rows,
    read_runs,
    synthesis_context,
)

REPORT_DIR = "report"
INDEX = "index.html"
# How many runs of one reason the overview links before it says "and N more".
RUNS_SHOWN_PER_REASON = 10


@dataclass(frozen=True)
class ReportResult:
    report_dir: Path
    index: Path
    cells: int
    runs: int


def report_dir(results_dir: Path) -> Path:
    return Path(results_dir) / REPORT_DIR


def build_report(results_dir: Path) -> ReportResult:
    """Write `results_dir/report/`, replacing any earlier report as a whole."""
    results_dir = Path(results_dir)
    scenario = load_frozen_scenario(results_dir)
    records, bad_files = read_runs(results_dir, scenario)
    context = synthesis_context(results_dir, scenario, records, bad_files)
    entries = list_runs(results_dir, scenario, records, bad_files, context["runs_given"])
    target = report_dir(results_dir)
    # Built beside the old report and swapped in: a reader never sees half of one.
    partial = results_dir / f".{REPORT_DIR}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    pages = Pages(partial)
    pages.write("style.css", "style.css.j2", diff_css=diff_css())
    by_cell: dict[str, list[RunEntry]] = defaultdict(list)
    for entry in entries:
        by_cell[entry.cell].append(entry)
    pages.write(
        INDEX,
        "overview.html.j2",
        root="",
        **overview_context(results_dir, scenario, context, entries),
    )
    slugs = {cell.name: cell.slug for cell in scenario.cells}
    for cell in scenario.cells:
        pages.write(
            f"cells/{cell.slug}.html",
            "cell.html.j2",
            root="../",
            **cell_context(scenario, cell, context, by_cell[cell.name]),
        )
    for entry in entries:
        view = run_view(results_dir, entry, scenario)
        pages.write(
            f"runs/{entry.run}.html",
            "run.html.j2",
            root="../../",
            run=view,
            cell_slug=slugs.get(entry.cell, entry.slug),
            scenario=scenario,
            raw_prefix=f"../../../runs/{entry.run}/",
        )
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return ReportResult(target, target / INDEX, len(scenario.cells), len(entries))


class Pages:
    """Renders the report's templates into its folder."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.environment = template_environment(
            "report", autoescape=jinja2.select_autoescape(["html.j2"], default=False)
        )
        self.environment.filters["code"] = code_spans

    def write(self, name: str, template: str, **context) -> None:
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = self.environment.get_template(template).render(**context)
        # A run's text may hold a lone surrogate (a JSON escape of a byte that is not UTF-8):
        # written as its escape, never a crash of the whole report.
        path.write_text(text, encoding="utf-8", errors="backslashreplace")


def code_spans(text: str) -> markupsafe.Markup:
    """A sentence of the synthesis, written for Markdown, as HTML: escaped, and each `name` in
    backticks as a code span (never raw backticks on the page)."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: the text as it is, escaped
        return markupsafe.escape(text)
    return markupsafe.Markup("").join(
        markupsafe.Markup("<code>{}</code>").format(part) if odd else markupsafe.escape(part)
        for odd, part in ((index % 2 == 1, part) for index, part in enumerate(parts))
    )


def status_counts(entries: list[RunEntry]) -> dict[str, int]:
    counts = Counter(entry.status for entry in entries)
    return {status: counts.get(status, 0) for status in RUN_STATUSES}


def overview_context(results_dir: Path, scenario, context: dict, entries) -> dict:
    by_cell: dict[str, list[RunEntry]] = defaultdict(list)
    for entry in entries:
        by_cell[entry.cell].append(entry)
    slugs = {cell.name: cell.slug for cell in scenario.cells}
    return {
        "scenario": scenario,
        "synthesis": context,
        "gaps": [item | {"slug": slugs[item["gap"].cell]} for item in context["gaps"]],
        "statuses": RUN_STATUSES,
        "counts": status_counts(entries),
        "cell_counts": {name: status_counts(found) for name, found in by_cell.items()},
        "figure": (results_dir / "gaps.svg").is_file(),
        "frontier_figure": (results_dir / "frontier.svg").is_file(),
        "synthesis_file": (results_dir / "synthesis.md").is_file(),
        "warnings": [item for item in warnings(context, entries) if not item.note],
        "notes": [item for item in warnings(context, entries) if item.note],
        "usage": usage(context, [entry.record for entry in entries if entry.record]),
    }


def cell_context(scenario, cell, context: dict, entries: list[RunEntry]) -> dict:
    row = next(item for item in context["matrix"] if item["cell"].name == cell.name)
    return {
        "scenario": scenario,
        "cell": cell,
        "row": row,
        "metrics": context["metrics"],
        "values": context["values"],
        "gaps": [item for item in context["gaps"] if item["gap"].cell == cell.name],
        "as_reference": cell.name == scenario.reference,
        "statuses": RUN_STATUSES,
        "counts": status_counts(entries),
        "runs": entries,
        "tasks_marked": marked_task_rows(context, cell.name),  # sorted, against the pooled gap
        "behind": {
            metric["name"]: runs_by_value(entries, metric["name"])
            for metric in context["metrics"]
            if metric["type"].kind == RATE
        },
    }


@dataclass(frozen=True)
class Notice:
    title: str
    text: str
    runs: list[str]  # run ids, linked (the first few)
    more: int = 0
    note: bool = False  # information (a form to fill, a diagnostic metric), not a warning


def warnings(context: dict, entries: list[RunEntry]) -> list[Notice]:
    """Every warning of the synthesis, each with the runs it concerns (the first few)."""
    found = []
    for item in context.get("warnings") or []:  # warnings the synthesis states on its own
        found.append(Notice("Warning", str(item), []))
    for status, meaning in (
        ("invalid", "a validator could not score the run; not a failing grade"),
        ("failed", "the agent hit the timeout or ended on its own error; counted, not scored"),
    ):
        for reason, runs in context[status]:
            found.append(_with_runs(f"{len(runs)} {status}", f"{reason} ({meaning})", runs))
    for metric in context["metrics"]:
        if metric["type"].kind == "diagnostic" and not metric["pending_only"]:
            note = f" ({metric['type'].note})" if metric["type"].note else ""
            found.append(
                Notice(
                    "Diagnostic metric",
                    f"{metric['name']} is diagnostic{note}: shown per run, never aggregated, "
                    "never given a verdict",
                    [],
                    note=True,
                )
            )
    for item in context["pending"]:
        form = item["forms"][0] if item["forms"] else "<validator>"
        found.append(
            Notice(
                "Pending a form",
                f"{item['metric']}: {item['count']} valid runs wait for a person to fill the "
                f"form {form} (copy forms/{form}.blank.toml to forms/{form}.toml, fill it in, "
                "and run the workflow again)",
                [],
                note=True,
            )
        )
    for item in context["isolated"]:
        found.append(
            Notice(
                "Isolated measurement",
                f"{item['row'].cell}, {item['row'].metric}: {item['text']} (no verdict)",
                [],
                note=True,
            )
        )
    faults = [entry.run for entry in entries if entry.status == "fault"]
    if faults:
        found.append(
            _with_runs(
                f"{len(faults)} fault",
                "the harness could not do these runs; the workflow redoes them",
                faults,
            )
        )
    not_started = [entry.run for entry in entries if entry.status == "not-started"]
    if not_started:
        found.append(
            _with_runs(
                f"{len(not_started)} not started: budget reached",
                "[protocol] budget_usd left no room for them; the figures come from the runs "
                "that ran. Raise it and run the workflow again to run them",
                not_started,
            )
        )
    missing = [entry.run for entry in entries if entry.status == "missing"]
    if missing:
        found.append(
            _with_runs(
                f"{len(missing)} missing",
                "no measures.json yet; running the workflow again does them",
                missing,
            )
        )
    for bad in context["bad_files"]:
        found.append(Notice("Unreadable", f"{bad.path} {bad.message}", []))
    return found


def _with_runs(title: str, text: str, runs: list[str]) -> Notice:
    shown = runs[:RUNS_SHOWN_PER_REASON]
    return Notice(title, text, shown, len(runs) - len(shown))


def usage(context: dict, records) -> dict:
    """Agent time, tokens and cost over the runs read; cost only where a provider reports it."""
    priced = [
        r.provenance.get("cost_usd")
        for r in records
        if isinstance(r.provenance.get("cost_usd"), int | float)
        # the offline model costs nothing, unless its policy sets a price
        and (r.provenance.get("provider") != OFFLINE_PROVIDER or r.provenance["cost_usd"] > 0)
    ]
    offline = sum(r.provenance.get("provider") == OFFLINE_PROVIDER for r in records)
    if priced:
        cost = f"{sum(priced):.2f} USD over {len(priced)} runs whose provider reports a cost"
    elif offline:
        cost = "none: the offline model costs nothing"
    else:
        cost = "not reported by the provider"
    return context["usage"] | {"cost": cost}
