"""`agentab synthesize RESULTS_DIR`: rebuild tables, figure and verdicts from the per-run files."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentab.synthesis.verdicts import SynthesisResult


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "synthesize",
        help="rebuild the synthesis of a results folder from its measures.json files",
        description=(
            "Rebuild cells.csv, gaps.csv, measures.csv, gaps.svg and synthesis.md in "
            "RESULTS_DIR from its frozen scenario.toml and its runs/*/r*/measures.json files "
            "alone: no agent, no validator, no network. The same inputs give the same CSV "
            "bytes. A partial folder works: missing runs are listed, and an unreadable "
            "measures.json is reported with its path while the others still count."
        ),
    )
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR", help="e.g. results/demo")
    parser.set_defaults(func=run)


def run(args) -> int:
    from agentab.synthesis.synthesize import synthesize

    refuse_a_scenario_folder(args.results_dir)
    result = synthesize(args.results_dir)
    print(summary(result))
    for bad in result.bad_files:
        print(f"warning: {args.results_dir / bad.path} {bad.message}", file=sys.stderr)
    return 0


def summary(result: SynthesisResult) -> str:
    """What the command prints of a SynthesisResult."""
    from agentab.synthesis.prose import describe_gap_figures
    from agentab.synthesis.verdicts import HOLM_LEVEL

    counts = result.status_counts()
    established = result.established
    lines = [
        f"{result.scenario_name}: {counts.get('valid', 0)} valid, {counts.get('invalid', 0)} "
        f"invalid, {counts.get('failed', 0)} failed, {len(result.missing)} missing, "
        f"{len(result.bad_files)} unreadable",
        f"gaps: {len(established)} established of {len(result.family)}",
    ]
    if result.calibration:
        aa_established = [gap for gap in result.calibration if gap.verdict.is_established]
        lines.append(
            f"A/A calibration: {len(aa_established)} established of {len(result.calibration)}"
            + (" (warning: the measurement tells identical cells apart)" if aa_established else "")
        )
    lines += [
        f"  established: {gap.cell} vs {gap.reference}, {gap.metric}: {describe_gap_figures(gap)}"
        + ("" if gap.survives_holm else f" (not below {HOLM_LEVEL} after Holm)")
        for gap in established
    ]
    if result.missing:
        shown = ", ".join(missing.path for missing in result.missing[:5])
        more = f" and {len(result.missing) - 5} more" if len(result.missing) > 5 else ""
        lines.append(f"missing runs: {shown}{more}")
    lines.append(f"wrote {', '.join(result.outputs)} in {result.results_dir}")
    return "\n".join(lines)


def refuse_a_scenario_folder(folder: Path) -> None:
    """A scenario's own folder (its scenario.toml, no runs/) is not a results folder: the
    synthesis would write its outputs among the scenario's files."""
    import tomllib

    from agentab.errors import AgentabError, problem
    from agentab.layout import ResultsFolder

    results = ResultsFolder(Path(folder))
    if results.runs_root.is_dir() or not results.frozen_scenario.is_file():
        return  # a results folder, or nothing: the synthesis says what is missing
    try:
        data = tomllib.loads(results.frozen_scenario.read_text(encoding="utf-8"))
        name = str((data.get("scenario") or {}).get("name") or "<scenario name>")
    except (OSError, ValueError):
        name = "<scenario name>"
    raise AgentabError(
        problem(
            folder,
            "",
            f"holds a {results.frozen_scenario.name} but no {results.runs_root.name}/ folder: "
            "a scenario's folder, not a results folder (the synthesis writes its outputs into "
            "the folder it is given)",
            f"pass the results folder the workflow writes for it, results/{name}; run "
            f"`snakemake --cores 8 --config 'scenarios=[\"{results.frozen_scenario}\"]'` "
            "first if it has not run",
        )
    )
