"""`agentab runs RESULTS_DIR`: every run with its status and the reason for it."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from agentab.report import RUN_STATUSES, list_runs
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
    parser.add_argument("--json", action="store_true", help="one JSON object a line")
    parser.set_defaults(func=run)


def run(args) -> int:
    scenario = load_frozen_scenario(args.results_dir)
    entries = list_runs(args.results_dir, scenario)
    counts = Counter(entry.status for entry in entries)
    shown = [e for e in entries if not args.status or e.status in args.status]
    if args.json:
        for entry in shown:
            line = {k: getattr(entry, k) for k in ("run", "cell", "rep", "status", "reason")}
            print(json.dumps(line | {"faults": entry.faults}, ensure_ascii=False))
    else:
        print(table(shown))
    summary = ", ".join(f"{counts[s]} {s}" for s in RUN_STATUSES if counts[s])
    print(f"{len(entries)} runs: {summary or 'none'}", file=sys.stderr)
    return 0


def table(entries) -> str:
    rows = [("RUN", "STATUS", "CELL", "REASON")]
    rows += [(e.run, e.status, e.cell, flat(e.reason)) for e in entries]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        "  ".join(row[i].ljust(widths[i]) for i in range(3)) + "  " + row[3] for row in rows
    ).rstrip()


def flat(text: str) -> str:
    return " ".join(text.split())
