"""What a run's page shows, gathered from the files of its folder."""

from __future__ import annotations

import functools
import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from agentab.files import shown_path
from agentab.report.conversation import Conversation, read_conversation
from agentab.report.receipt import ReceiptView, receipt_view
from agentab.report.runs import RunEntry, fault_reason, read_faults
from agentab.report.turn_usage import fill_output_tokens

OFFLINE_PROVIDER = "offline"
PATCH_FILE = "result.patch"
RECEIPT_FILE = "receipt.json"
REQUEST_LOG_FILE = "model-requests.jsonl"
# A patch beyond this is cut on the page (a vendored file, a binary blob); the raw file stays.
MAX_PATCH_CHARS = 500_000
# Files an attempt leaves while it runs, and a tool's half-written files: not results.
SKIPPED_PREFIXES = (".",)
DIFF_CSS_CLASS = "diff"


@dataclass
class ValidatorView:
    name: str
    mode: str
    ok: bool
    rows: list[dict]  # metric, value (as JSON text), reason
    problem: str


@dataclass
class RunView:
    entry: RunEntry
    task: str
    final_message: str
    conversation: Conversation | None
    diff_html: str
    diff_cut: bool
    patch_present: bool
    validators: list[ValidatorView]
    receipt: ReceiptView | None
    provenance: list[tuple[str, str]]
    builtin: list[tuple[str, str]]  # the built-in run metrics, in their order
    # The contract metrics a valid run was scored (name, value as JSON), in the contract's
    # order: beside the status, whose "valid" says it was scored, not that it went well.
    scored: list[tuple[str, str]]
    problems: list[str]
    faults: list[str]
    raw_files: list[str]  # relative to the run folder
    outcome: dict = field(default_factory=dict)
    bricks_used: list[dict] = field(default_factory=list)  # builtin.brick_usage, per brick
    # index in conversation.turns -> (its number among the assistant's turns, the bricks it
    # used first): the page anchors every assistant turn and marks a brick's first use
    turn_marks: dict[int, tuple[int, list[str]]] = field(default_factory=dict)


def diff_css() -> str:
    """The colours of the highlighted diff, for the report's style sheet."""
    return HtmlFormatter(style="default").get_style_defs(f".{DIFF_CSS_CLASS}")


def run_view(results_dir: Path, entry: RunEntry, scenario) -> RunView:
    folder = Path(results_dir) / entry.folder
    run = read_json(folder / "run.json") or {}
    facts = run.get("facts") if isinstance(run.get("facts"), dict) else {}
    conversation = read_conversation(folder)
    fill_output_tokens(conversation, folder / REQUEST_LOG_FILE)
    diff_html, cut, present = highlighted_patch(folder / PATCH_FILE)
    record = entry.record
    return RunView(
        entry=entry,
        task=(conversation.task if conversation else "") or cell_prompt(scenario, entry.run),
        final_message=str(facts.get("final_message") or "")
        or (conversation.final_message if conversation else ""),
        conversation=conversation,
        diff_html=diff_html,
        diff_cut=cut,
        patch_present=present,
        validators=validator_views(folder),
        receipt=receipt_view(folder / RECEIPT_FILE),
        provenance=provenance_rows(record.provenance if record else run_provenance(run)),
        builtin=builtin_rows(record),
        scored=scored_metrics(record, scenario),
        bricks_used=usage_records(record),
        turn_marks=turn_marks(conversation, usage_records(record)),
        problems=list(record.problems) if record else [],
        faults=[fault_reason(fault) for fault in read_faults(folder)],
        raw_files=raw_files(folder),
        outcome=run.get("outcome") if isinstance(run.get("outcome"), dict) else {},
    )


def scored_metrics(record, scenario) -> list[tuple[str, str]]:
    """The contract metrics of a valid run, in the scenario's order, as JSON text."""
    if record is None or record.status != "valid":
        return []
    order = list(getattr(scenario, "metrics", None) or record.metrics)
    order += [name for name in record.metrics if name not in order]
    return [(name, json_text(record.metrics[name])) for name in order if name in record.metrics]


def usage_records(record) -> list[dict]:
    """The run's per-brick use (`builtin.brick_usage`), as measures.json holds it."""
    usage = ((record.builtin if record else None) or {}).get("brick_usage")
    return [entry for entry in usage or [] if isinstance(entry, dict)]


def turn_marks(conversation, usage: list[dict]) -> dict[int, tuple[int, list[str]]]:
    """Each assistant turn's number (turns count the assistant's messages from 1, as
    `first_turn` does) and the bricks first used in it."""
    firsts: dict[int, list[str]] = {}
    for entry in usage:
        if entry.get("used") is True and isinstance(entry.get("first_turn"), int):
            firsts.setdefault(entry["first_turn"], []).append(str(entry.get("brick")))
    marks, number = {}, 0
    for index, turn in enumerate(conversation.turns if conversation else []):
        if turn.role == "assistant":
            number += 1
            marks[index] = (number, firsts.get(number, []))
    return marks


def builtin_rows(record) -> list[tuple[str, str]]:
    """The built-in metrics as rows; `protected_edits` names the protected paths it counts.
    The per-brick use has a table of its own."""
    rows = []
    for name, value in ((record.builtin if record else None) or {}).items():
        if name == "brick_usage":
            continue
        shown = "" if value is None else str(value)
        if isinstance(value, dict | list):
            shown = json.dumps(value, ensure_ascii=False)
        if name == "protected_edits" and record.protected_files:
            # A name is any bytes the agent chose: quoted as git quotes it, on one line.
            names = ", ".join(shown_path(str(name)) for name in record.protected_files)
            shown += f" ({names}: given back as tagged to validators)"
        rows.append((name, shown))
    return rows


def read_json(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def cell_prompt(scenario, run: str) -> str:
    """The prompt of a run's cell (and task), by its run id `<folder>/rNN`."""
    try:
        return scenario.run_cell(run.partition("/")[0]).prompt or ""
    except Exception:  # a frozen scenario whose prompt file was not kept beside it
        return ""


def highlighted_patch(path: Path) -> tuple[str, bool, bool]:
    """(HTML of the diff, whether it was cut, whether the patch file exists)."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return "", False, False
    cut = len(text) > MAX_PATCH_CHARS
    if cut:
        text = text[:MAX_PATCH_CHARS]
    if not text.strip():
        return "", False, True
    return highlight(text, DiffLexer(), _diff_formatter()), cut, True


@functools.cache
def _diff_formatter() -> HtmlFormatter:
    # Made once: a formatter builds its whole style table when it is created.
    return HtmlFormatter(cssclass=DIFF_CSS_CLASS, style="default")


def validator_views(folder: Path) -> list[ValidatorView]:
    views = []
    for path in sorted((folder / "validators").glob("*.json")):
        data = read_json(path)
        if not isinstance(data, dict):
            views.append(ValidatorView(path.stem, "?", False, [], f"{path.name} is not readable"))
            continue
        metrics = data.get("metrics") if isinstance(data.get("metrics"), dict) else {}
        reasons = data.get("reasons") if isinstance(data.get("reasons"), dict) else {}
        rows = [
            {"metric": name, "value": json_text(value), "reason": str(reasons.get(name) or "")}
            for name, value in metrics.items()
        ]
        rows += [
            {"metric": name, "value": "", "reason": str(reason)}
            for name, reason in reasons.items()
            if name not in metrics
        ]
        views.append(
            ValidatorView(
                name=str(data.get("validator") or path.stem),
                mode=str(data.get("mode") or "?"),
                ok=bool(data.get("ok")),
                rows=rows,
                problem=str(data.get("problem") or ""),
            )
        )
    return views


def json_text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def run_provenance(run: dict) -> dict:
    """Provenance from run.json, for a run that has no measures.json yet."""
    facts = run.get("facts") if isinstance(run.get("facts"), dict) else {}
    keys = ("harness", "harness_version", "provider", "model", "thinking", "argv", "started")
    found = {key: run[key] for key in keys if key in run}
    if isinstance(run.get("etalon"), dict):
        found["etalon_sha"] = run["etalon"].get("sha")
    for key in ("duration_s",):
        if key in run:
            found[key] = run[key]
    if facts:
        found["tokens"] = facts.get("tokens")
        found["cost_usd"] = facts.get("cost_usd")
    return found


def provenance_rows(provenance: dict) -> list[tuple[str, str]]:
    rows = []
    for key, value in provenance.items():
        if key == "argv" and isinstance(value, list):
            shown = shlex.join(str(part) for part in value)
        elif key == "cost_usd":
            shown = cost_text(provenance.get("provider"), value)
        elif isinstance(value, dict):
            shown = ", ".join(f"{k} {json_text(v)}" for k, v in value.items())
        else:
            shown = "—" if value is None else json_text(value)
        rows.append((key, shown))
    return rows


def cost_text(provider, cost) -> str:
    """A run's cost as a person should read it: the offline model costs nothing."""
    if provider == OFFLINE_PROVIDER:
        return "none: the offline model costs nothing"
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        return f"{cost:.4f} USD"
    return "not reported by the provider"


def raw_files(folder: Path) -> list[str]:
    """Every file of the run folder, relative to it, in path order."""
    found = []
    for root, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if not name.startswith(SKIPPED_PREFIXES)]
        base = os.path.relpath(root, folder)
        found += [
            name if base == "." else f"{base}/{name}"
            for name in files
            if not name.startswith(SKIPPED_PREFIXES) and not name.endswith(".partial")
        ]
    return sorted(found)
