"""`agentab check SCENARIO`: load a scenario, print its cell matrix and run count, or every error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agentab.commands.credentials_check import (
    credentials_file,
    credentials_problems,
    providers_needing_keys,
)
from agentab.commands.etalon_checks import etalon_warnings, try_setup
from agentab.commands.provider_check import server_check
from agentab.commands.validator_check import try_validators
from agentab.confinement.limits import enforcement_here
from agentab.errors import ScenarioError
from agentab.etalon import RUNNER_FILES
from agentab.run.policy_check import policy_edit_problems
from agentab.scenario import Cell, Scenario, load_scenario
from agentab.scenario.rules import check_scale
from agentab.stats.rule import MIN_RUNS_PER_GROUP, MIN_RUNS_PER_TASK
from agentab.stats.sequential import fewest_pairs


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check a scenario and print its cell matrix",
        description=(
            "Load a scenario, check every load-time rule (etalon tag included) and print the "
            "cells in the order they are rendered, each with its delta and bricks, and the "
            "number of runs. Exit 0 when the scenario may run, 2 when it may not."
        ),
    )
    parser.add_argument("scenario", type=Path, help="the scenario TOML file")
    parser.add_argument(
        "--json", action="store_true", help="print the matrix (or the errors) as JSON"
    )
    parser.add_argument(
        "--no-etalon",
        action="store_true",
        help="skip reaching the etalon repository (offline editing)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=Path("config/config.yaml"),
        help="the workflow's config, which names the credentials file (default config/config.yaml)",
    )
    parser.add_argument(
        "--no-credentials",
        action="store_true",
        help="skip reading the credentials file a real provider or judge needs",
    )
    parser.add_argument(
        "--no-server",
        action="store_true",
        help="skip asking a declared server ([providers.<name>]) which models it serves",
    )
    parser.add_argument(
        "--setup",
        action="store_true",
        help="run the etalon's [etalon] setup once on a fresh clone and say what it took and made",
    )
    parser.add_argument(
        "--validators",
        action="store_true",
        help="run each script and tests validator once on the etalon as tagged (no agent run) "
        "and refuse one whose output breaks the contract, before any run is paid for",
    )
    parser.add_argument(
        "--state",
        type=Path,
        default=Path(".agentab"),
        help="the state folder whose etalon mirrors are used (default .agentab)",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    try:
        scenario = load_scenario(args.scenario, check_etalon=not args.no_etalon)
        if args.setup:
            # The setup alone first: an offline policy that does not fit the repository yet is
            # no reason not to try the environment it needs.
            print(try_setup(scenario, args.state), file=sys.stderr)
        # The offline policies' steps, played on the files of the tags they run on.
        failing_steps = [] if args.no_etalon else policy_edit_problems(scenario, mirrors(args))
        if failing_steps:
            raise ScenarioError(failing_steps)
        if not args.no_credentials:
            missing_keys = credentials_problems(scenario, args.config)
            if missing_keys:
                raise ScenarioError(missing_keys)
        tried: list[str] = []
        if args.validators:
            tried, broken = try_validators(scenario, args.state)
            if broken:
                raise ScenarioError(broken)
        servers: list[str] = []
        if not args.no_server:
            unserved, servers = server_check(scenario)
            if unserved:
                raise ScenarioError(unserved)
    except ScenarioError as error:
        if args.json:
            print(
                json.dumps(
                    {"ok": False, "problems": [p.as_dict() for p in error.problems]}, indent=2
                )
            )
        else:
            count = len(error.problems)
            print(
                f"{args.scenario}: {count} problem{'s' * (count != 1)}; nothing runs\n",
                file=sys.stderr,
            )
            print(error.render(), file=sys.stderr)
        return 2
    warnings = check_scale(scenario) + repetitions_warnings(scenario)
    if not args.no_etalon:
        warnings += etalon_warnings(scenario, mirrors(args))
    if args.json:
        report = {"ok": True, **scenario.as_dict(), "jobs": workflow_jobs(scenario)}
        report["warnings"] = warnings
        report["receipt_limits"] = receipt_limits(scenario)
        report["servers"] = servers
        report["validators_tried"] = tried
        report["limits"] = {**scenario.limits.as_dict(), "here": enforcement_here()}
        report["min_runs_per_group"] = MIN_RUNS_PER_GROUP
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(render_matrix(scenario, warnings))
        if not args.no_credentials:
            print(credentials_line(scenario, args.config))
        for line in servers + tried:
            print(line)
    return 0


def mirrors(args) -> Path:
    return args.state / "mirrors"


def credentials_line(scenario: Scenario, config: Path) -> str:
    needed = providers_needing_keys(scenario)
    if not needed:
        return "keys        none needed: no real provider and no judge of a real model"
    tables = ", ".join(f"[{provider}]" for provider in needed)
    return f"keys        {tables} api_key found in {credentials_file(config)}"


def repetitions_warnings(scenario: Scenario) -> list[str]:
    """Fewer repetitions than a verdict needs make every gap inconclusive, whatever it shows."""
    tasks = max(1, len(scenario.tasks))
    if len(scenario.cells) < 2:
        return []
    if scenario.sequential:
        return sequential_warnings(scenario, tasks)
    if tasks > 1 and scenario.repetitions < MIN_RUNS_PER_TASK:
        return [
            f"{scenario.path}: [protocol] repetitions = {scenario.repetitions} is below the "
            f"{MIN_RUNS_PER_TASK} valid runs of each cell in each task a pooled gap needs to be "
            f"established: every gap will be inconclusive; set repetitions = "
            f"{max(MIN_RUNS_PER_TASK, -(-MIN_RUNS_PER_GROUP // tasks))} or more"
        ]
    if scenario.repetitions * tasks >= MIN_RUNS_PER_GROUP:
        return []
    if scenario.tasks:  # the minimum applies to a cell's runs over all its tasks
        return [
            f"{scenario.path}: [protocol] repetitions = {scenario.repetitions} × {tasks} tasks "
            f"gives each cell {scenario.repetitions * tasks} runs, below the {MIN_RUNS_PER_GROUP} "
            "valid runs per cell a gap needs to be established: every gap will be "
            f"inconclusive; set repetitions = {-(-MIN_RUNS_PER_GROUP // tasks)} or more, or keep "
            "this as a pilot for `agentab plan`"
        ]
    return [
        f"{scenario.path}: [protocol] repetitions = {scenario.repetitions} is below the "
        f"{MIN_RUNS_PER_GROUP} valid runs per cell a gap needs to be established: every gap "
        f"will be inconclusive; set repetitions = {MIN_RUNS_PER_GROUP} or more (a few more if "
        "some runs may fail or be invalid), or keep this as a pilot for `agentab plan`"
    ]


def describe_delta(cell: Cell) -> str:
    if cell.is_baseline:
        return "baseline"
    if getattr(cell, "is_aa", False):
        return "A/A: the reference once more, its own seeds (a calibration, outside Holm)"
    if not cell.settings:
        return "no change from the baseline"
    parts = []
    for key, value in cell.settings.items():
        shown = ", ".join(value) if isinstance(value, list) else value
        parts.append(f"{key}: {_shorten(str(shown))}")
    chosen = ", ".join(f"{dimension}={value}" for dimension, value in cell.delta.items())
    return f"[{chosen}] " + "; ".join(parts)


def _shorten(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def sequential_warnings(scenario: Scenario, tasks: int) -> list[str]:
    """A sequential maximum too small for any sequence to exclude 0, whatever the runs show."""
    horizon = scenario.repetitions * tasks
    if fewest_pairs(horizon) is not None:
        return []
    return [
        f"{scenario.path}: [protocol] repetitions = {scenario.repetitions} gives each gap at "
        f"most {horizon} pairs of runs, too few for a confidence sequence to exclude 0 even if "
        "every pair differed: every gap will be inconclusive; raise repetitions (10 or more)"
    ]


def stopping_lines(scenario: Scenario) -> list[str]:
    tasks = f" × {len(scenario.tasks)} tasks" if scenario.tasks else ""
    runs = (
        f"runs        {len(scenario.cells)} cells{tasks} × {scenario.repetitions} repetitions "
        f"= {scenario.run_count}"
    )
    if not scenario.sequential:
        return [
            runs,
            f"verdicts    a gap is established only from at least {MIN_RUNS_PER_GROUP} valid "
            "runs in each of its two cells (docs/synthesis.md)",
        ]
    decide = ", ".join(scenario.decide)
    return [
        f"{runs} at most: sequential stopping, waves of {scenario.wave} ({scenario.waves} "
        f"at most); a cell stops once its gaps in {decide} are decided",
        "verdicts    each gap judged after every wave by an anytime-valid 95% confidence "
        "sequence (docs/synthesis.md#stopping-early-the-sequential-rule)",
    ]


def render_matrix(scenario: Scenario, warnings: list[str]) -> str:
    agent = scenario.agent
    lines = [
        f"scenario    {scenario.name}  ({scenario.path})",
        f"question    {scenario.question or '-'}",
        f"etalon      {scenario.etalon.repo} @ {scenario.etalon.tag}",
        f"agent       {agent.harness} {agent.version} · {agent.provider}/{agent.model} · "
        f"thinking {agent.thinking} · timeout {agent.timeout_s:g}s",
        *limits_lines(scenario),
        f"metrics     {', '.join(scenario.metrics)}",
        *protect_lines(scenario),
        "validators  " + ", ".join(f"{s.name} ({s.mode})" for s in scenario.validators.values()),
        "",
        f"cells ({len(scenario.cells)}), reference: {scenario.reference}",
    ]
    width = max(len(cell.name) for cell in scenario.cells) + len(" (variant)")
    for number, cell in enumerate(scenario.cells, start=1):
        label = cell.name + (" (variant)" if cell.is_variant else "")
        marker = "*" if cell.name == scenario.reference else " "
        lines.append(f" {marker}{number:>2}. {label:<{width}}  {describe_delta(cell)}")
    lines += task_lines(scenario)
    lines += [
        "",
        *stopping_lines(scenario),
        f"jobs        {workflow_jobs(scenario)} (an agent run, {len(scored(scenario))} "
        f"validator{'s' * (len(scored(scenario)) != 1)} and a measure per run)",
    ]
    if scenario.budget_usd is not None:
        lines.append(
            f"budget      {scenario.budget_usd:g} USD: no run starts once spent + in flight + "
            "its estimate would pass it (docs/workflow.md)"
        )
    lines += [f"warning     {warning}" for warning in warnings]
    lines += [f"receipt     {limit}" for limit in receipt_limits(scenario)]
    return "\n".join(lines)


def protect_lines(scenario) -> list[str]:
    """What every validator's checkout gets back as tagged: the scenario's own paths (or the
    default), then what a test runner reads, which every scenario protects."""
    declared = (scenario.raw.get("validation") or {}).get("protect")
    own = [glob for glob in scenario.protect if glob not in RUNNER_FILES]
    said = "" if declared is not None else " (the default: the scenario writes no protect)"
    return [
        f"protect     {', '.join(own) or 'nothing of its own'}{said}",
        f"            and always what a test runner reads: {', '.join(RUNNER_FILES)}",
        "            given back as tagged to every validator (docs/validators.md)",
    ]


def limits_lines(scenario: Scenario) -> list[str]:
    """Each run's limits, and how this machine would enforce them."""
    limits = scenario.limits
    shown = limits.as_dict()
    return [
        f"limits      each run: memory {shown['memory']}, processes {shown['processes']}, "
        f"disk {shown['disk']}, patch {shown['patch']}",
        f"            here: {enforcement_here()} (docs/confinement.md#limits)",
    ]


def task_lines(scenario: Scenario) -> list[str]:
    """The tasks of a scenario with [tasks.*], each with its etalon tag and its first line."""
    if not scenario.tasks:
        return []
    lines = ["", f"tasks ({len(scenario.tasks)}): every cell runs each; runs/<cell>--<task>/rNN"]
    width = max(len(task.name) for task in scenario.tasks)
    for number, task in enumerate(scenario.tasks, start=1):
        tag = task.tag or scenario.etalon.tag
        first = task.prompt.strip().splitlines()[0] if task.prompt.strip() else ""
        lines.append(f"   {number:>2}. {task.name:<{width}}  @ {tag}  {_shorten(first)}")
    return lines


def receipt_limits(scenario: Scenario) -> list[str]:
    """What a run's receipt cannot prove on its cell's harness (docs/receipts.md): bricks it cannot
    see, and a thinking level checked only for being sent, not for its value."""
    from agentab.harnesses import adapter_class, get_harness
    from agentab.harnesses.base import ANY_REASONING
    from agentab.run.recording_proxy import DEFAULT_ENDPOINTS

    limits = {}
    for cell in scenario.cells:
        agent = cell.agent
        if agent.endpoint is not None:
            limits[("recording", agent.provider)] = (
                f"requests to {agent.provider} pass through a recording proxy on 127.0.0.1 to "
                f"{agent.endpoint.url} ([providers.{agent.provider}], {agent.endpoint.api}), "
                + (
                    f"with the key of the credentials file's [{agent.provider}]"
                    if agent.endpoint.key
                    else "without a key"
                )
            )
        elif agent.provider != "offline":
            limits[("recording", agent.provider)] = (
                f"requests to {agent.provider} pass through a recording proxy on 127.0.0.1 to "
                f"`provider_endpoints.{agent.provider}` in config/config.yaml, else "
                f"{DEFAULT_ENDPOINTS.get(agent.provider, '(none: set it)')}"
            )
        harness = get_harness(agent.harness)
        sent = harness.sent_thinking(agent.thinking, agent.model, agent.thinking_provider)
        if sent == ANY_REASONING:
            limits[("thinking", agent.harness, agent.model, agent.thinking)] = (
                f"thinking {agent.thinking} on {agent.harness} with {agent.provider}/{agent.model}: "
                f"{agent.harness} maps the level per model from its own catalogue, so the "
                "receipt checks that a reasoning setting was sent, and the harness's own word"
            )
        unprovable = adapter_class(cell.agent.harness).unprovable_bricks
        for brick in cell.bricks:
            if brick.kind in unprovable:
                limits[(brick.rel, cell.agent.harness)] = (
                    f"cannot prove that {brick.rel} reaches the model on {cell.agent.harness}: "
                    f"{unprovable[brick.kind]}"
                )
    return list(limits.values())


def scored(scenario: Scenario) -> list[str]:
    return [name for name, spec in scenario.validators.items() if spec.mode != "form"]


def workflow_jobs(scenario: Scenario) -> int:
    return scenario.run_count * (2 + len(scored(scenario)))
