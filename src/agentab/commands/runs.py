"""`agentab runs RESULTS_DIR`: every run with its status and the reason for it."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from agentab.report import RUN_STATUSES, list_runs
from agentab.report.metric_filter import parse_metric_filter
from agentab.report.sources import load_frozen_scenario


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "runs",
        help="list every run of a results folder with its status and reason",
        description=(
            "List every run the frozen scenario plans, with its status: valid, invalid (a "
            "validator could not score it), failed (timeout, the agent's own error), fault (the "
            "harness could not do it: faults.jsonl and no measures.json), missing (not done "
            "yet) or unreadable (a measures.json that cannot be read), and the reason."
        ),
    )
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR", help="e.g. results/demo")
    parser.add_argument(
        "--status",
        action="append",
        choices=RUN_STATUSES,
        default=[],
        help="only runs of this status (repeat for several)",
    )
    parser.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="only valid runs whose metric has this value: ran_tests=false, ran_tests=true, "
        "'turns>8' (=, !=, <, <=, >, >=; repeat to ask for all)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object a line")
    parser.set_defaults(func=run)


def run(args) -> int:
    scenario = load_frozen_scenario(args.results_dir)
    entries = list_runs(args.results_dir, scenario)
    counts = Counter(entry.status for entry in entries)
    filters = [parse_metric_filter(text) for text in args.metric]
    shown = [e for e in entries if not args.status or e.status in args.status]
    shown = [e for e in shown if all(f.matches(e.record) for f in filters)]
    if args.json:
        for entry in shown:
            line = {k: getattr(entry, k) for k in ("run", "cell", "rep", "status", "reason")}
            line |= {"faults": entry.faults, "builtin": builtin_of(entry)}
            line |= {"metrics": entry.record.metrics if entry.record else {}}
            print(json.dumps(line, ensure_ascii=False))
    else:
        print(table(shown))
    summary = ", ".join(f"{counts[s]} {s}" for s in RUN_STATUSES if counts[s])
    print(f"{len(entries)} runs: {summary or 'none'}", file=sys.stderr)
    if filters:
        asked = " and ".join(args.metric)
        print(f"{len(shown)} of them with {asked}", file=sys.stderr)
    return 0


def table(entries) -> str:
    rows = [("RUN", "STATUS", "CELL", "TURNS", "TOOL CALLS", "PROTECTED", "BRICKS USED", "REASON")]
    rows += [
        (e.run, e.status, e.cell, *builtin_columns(e), bricks_used_column(e), flat(e.reason))
        for e in entries
    ]
    last = len(rows[0]) - 1
    widths = [max(len(row[i]) for row in rows) for i in range(last)]
    return "\n".join(
        "  ".join(row[i].ljust(widths[i]) for i in range(last)) + "  " + row[last] for row in rows
    ).rstrip()


def builtin_of(entry) -> dict:
    """The run's built-in metrics (turns, tool calls and errors, tokens, cost, duration)."""
    return (entry.record.builtin if entry.record else None) or {}


def builtin_columns(entry) -> tuple[str, str, str]:
    """TURNS, TOOL CALLS, and PROTECTED: the protected paths its patch touched, named."""
    builtin = builtin_of(entry)
    turns = "" if builtin.get("turns") is None else str(builtin["turns"])
    calls, errors = builtin.get("tool_calls"), builtin.get("tool_errors")
    tools = "" if calls is None else f"{calls} ({errors or 0} failed)"
    files = (entry.record.protected_files if entry.record else None) or []
    protected = f"{len(files)}: {', '.join(files[:2])}{', …' if len(files) > 2 else ''}"
    return turns, tools, protected if files else ("0" if "protected_edits" in builtin else "")


def bricks_used_column(entry) -> str:
    """BRICKS USED: each brick whose use its run shows, with the turn of its first use."""
    usage = builtin_of(entry).get("brick_usage") or []
    return ", ".join(
        f"{u.get('brick')} (turn {u.get('first_turn')})" if u["used"] else f"{u.get('brick')} (no)"
        for u in usage
        if isinstance(u, dict) and isinstance(u.get("used"), bool)
    )


def flat(text: str) -> str:
    return " ".join(text.split())
