"""`agentab redo RESULTS_DIR RUN… | --status S`: remove runs so that the workflow redoes them."""

from __future__ import annotations

from pathlib import Path

from agentab.commands.next_command import DEFAULT_CONFIG, snakemake_command
from agentab.errors import AgentabError, problem
from agentab.report.redo import REDO_STATUSES, redo_runs


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "redo",
        help="remove chosen runs (and the outputs built from them) so snakemake redoes them",
        description=(
            "Remove the files of the runs named (as `agentab runs` prints them) or of every run "
            "of a status, except their faults.jsonl (the history of faults), and the outputs "
            "built from all runs: the synthesis, the report and the checked answers of filled "
            "forms. The next `snakemake` redoes those runs and nothing else (the synthesis, "
            "forms and report are rebuilt)."
        ),
    )
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR", help="e.g. results/demo")
    parser.add_argument("runs", nargs="*", metavar="RUN", help="a run, e.g. rule-off/r03")
    parser.add_argument(
        "--status",
        action="append",
        choices=REDO_STATUSES,
        default=[],
        help="every run of this status (repeat for several)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=DEFAULT_CONFIG,
        help="the workflow's config, to print the snakemake command (default config/config.yaml)",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    if not args.runs and not args.status:
        raise AgentabError(
            problem(
                "agentab redo",
                "",
                "no run chosen",
                "name runs (e.g. rule-off/r03) or give --status failed|invalid|fault",
            )
        )
    result = redo_runs(args.results_dir, args.runs, args.status)
    if not result.runs:
        print("no run to redo: nothing removed")
        return 0
    for entry in result.runs:
        print(f"redo {entry.run} ({entry.status}{': ' + entry.reason if entry.reason else ''})")
    outputs = [p for p in result.removed if "runs" not in p.relative_to(args.results_dir).parts]
    if outputs:
        print("removed " + ", ".join(str(p.relative_to(args.results_dir)) for p in outputs))
    count = len(result.runs)
    print(
        f"{count} run{'s' * (count != 1)} to redo; this redoes {'them' if count != 1 else 'it'} "
        f"and nothing else:\n  {snakemake_command(args.results_dir, args.config)}"
    )
    return 0
