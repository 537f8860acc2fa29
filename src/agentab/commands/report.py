"""`agentab report RESULTS_DIR`: write the static HTML report of a results folder."""

from __future__ import annotations

from pathlib import Path

from agentab.report import build_report


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write the HTML report of a results folder (overview, cells, every run)",
        description=(
            "Write RESULTS_DIR/report/: static HTML that opens from disk, offline. index.html "
            "is the overview (question, matrix, gap table with verdicts, figure, warnings); "
            "cells/<slug>.html lists a cell's runs; runs/<slug>/r<NN>.html shows one run (task, "
            "conversation, diff, validators, receipt, provenance, problems, raw files). Built "
            "from the frozen scenario and the files of each run; a partial folder works."
        ),
    )
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR", help="e.g. results/demo")
    parser.set_defaults(func=run)


def run(args) -> int:
    result = build_report(args.results_dir)
    print(f"wrote {result.index} ({result.cells} cells, {result.runs} runs): open it in a browser")
    return 0
