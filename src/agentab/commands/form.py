"""`agentab form blank|status RESULTS_DIR`: the blind forms a person fills in."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.layout import ResultsFolder
from agentab.synthesis.runs.results import load_frozen_scenario
from agentab.validators.form import read_form_answers
from agentab.validators.form_blank import form_validators, write_blank_form


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "form",
        help="write blank forms, or show how many answers are pending",
        description=(
            "A form validator is a blind, shuffled TOML file a person fills in. `blank` writes "
            "forms/<validator>.blank.toml in the results folder, listing every run the other "
            "validators scored under an opaque id, with its material beside it; copy it to "
            "forms/<validator>.toml and fill it (agentab never writes that file). `status` "
            "checks the filled forms and counts the answers still pending."
        ),
    )
    verbs = parser.add_subparsers(dest="form_command", metavar="VERB", required=True)
    blank = verbs.add_parser(
        "blank",
        help="write forms/<validator>.blank.toml and its material",
        description="Write the blank form of every form validator (or of one) of a results "
        "folder. A blank that already holds answers is refused, never overwritten.",
    )
    blank.add_argument("results_dir", type=Path, help="results/<scenario name>")
    blank.add_argument("--validator", help="only this form validator")
    blank.add_argument(
        "--seed",
        type=int,
        help="seed of the ids and the order (default: the one kept from the first blank form, "
        "else a random one)",
    )
    blank.set_defaults(func=run_blank)
    status = verbs.add_parser(
        "status",
        help="check the filled forms and count pending answers",
        description="Read forms/<validator>.toml of every form validator, check every answer, "
        "and print how many runs are answered and how many are pending.",
    )
    status.add_argument("results_dir", type=Path, help="results/<scenario name>")
    status.set_defaults(func=run_status)


def chosen_forms(scenario, wanted: str | None) -> list[str]:
    names = form_validators(scenario)
    if wanted is not None and wanted not in names:
        raise AgentabError(
            problem(
                scenario.path,
                f"validators.{wanted}",
                "no form validator of this name",
                fix=f"use one of: {', '.join(names) or '(none: the scenario has no form)'}",
            )
        )
    return [wanted] if wanted else names


def run_blank(args) -> int:
    scenario = load_frozen_scenario(args.results_dir)
    names = chosen_forms(scenario, args.validator)
    if not names:
        print(f"{scenario.name}: no form validator; nothing to write")
    for name in names:
        path = write_blank_form(args.results_dir, scenario, name, seed=args.seed)
        count = sum(1 for line in path.read_text("utf-8").splitlines() if line.startswith("[runs."))
        filled = ResultsFolder(args.results_dir).filled_form(name)
        print(f"{path}: {count} runs; fill a copy named {filled}")
    return 0


def run_status(args) -> int:
    scenario = load_frozen_scenario(args.results_dir)
    names = form_validators(scenario)
    if not names:
        print(f"{scenario.name}: no form validator; nothing is pending a person's answer")
        return 0
    lines, waiting = [], 0
    for name in names:
        answers = read_form_answers(args.results_dir, scenario, name)
        waiting += bool(answers.pending)
        lines += form_status_lines(args.results_dir, name, answers)
    print(f"{scenario.name}: {waiting} of {len(names)} form{'s' * (len(names) != 1)} pending")
    print("\n".join(lines))
    return 0


def form_status_lines(results_dir: Path, name: str, answers) -> list[str]:
    """How far a form is: runs answered, runs and items pending, and which file to fill."""
    folder = ResultsFolder(results_dir)
    runs = len(set(answers.answers) | set(answers.pending))
    items = Counter(metric for metrics in answers.pending.values() for metric in metrics)
    lines = [
        f"{name}: {len(answers.answers)} of {runs} runs answered, {len(answers.pending)} pending"
    ]
    if items:
        shown = ", ".join(f"{metric} ({count} runs)" for metric, count in items.items())
        lines.append(f"  items pending: {shown}")
    if answers.form_path.is_file():
        lines.append(f"  filling: {answers.form_path}")
    elif answers.pending:
        blank = folder.blank_form(name)
        lines.append(
            f"  not started: copy {blank} to {answers.form_path} and answer it "
            f"(each run's material is in {folder.form_material(name)})"
        )
    return lines
