"""Run step: `python -m agentab.steps.run --scenario S --cell SLUG --rep N --clone DIR …`

Runs the agent once for one cell and repetition, on the fresh clone, and writes the run's files:
each is named by its own option (the workflow rule passes its outputs); `--out DIR` names them
all at once, as the results layout places them in a run folder. Exit 0 when the run has an
outcome (completed or failed) or when the scenario's budget did not let it start (its files
say `not-started`), 3 on a fault (the workflow redoes it), 2 on an error a person must
fix (e.g. the installed harness is not the pinned version), 128 + the signal's number when it was
asked to stop: the agent is ended and the run has no outcome.
"""

from __future__ import annotations

from pathlib import Path

from agentab.budget.spending import RunSpending
from agentab.confinement.bwrap import BWRAP, MODES, require_sandbox
from agentab.layout import RunFolder, run_id
from agentab.run.agent_run import RunFiles, perform_run
from agentab.run.process import end_stale_twin
from agentab.scenario import load_scenario_for_step
from agentab.steps.common import add_run_arguments, run_step

FILE_OPTIONS = {
    "record": "run.json: written last",
    "stream": "the harness's raw stream, byte for byte",
    "transcript": "the conversation in the harness-neutral format validators read",
    "patch": "result.patch: the agent's work against the etalon",
    "model_requests": "every request that reached the model",
    "agent_stderr": "the harness's standard error",
    "lock": "the lock holding the agent's process group",
    "earlier_attempts": "where an unfinished attempt's request log is set aside",
    "faults": "faults.jsonl: one line per attempt that ended in a fault",
    "receipt": "receipt.json: what reached the model, checked against the cell",
}


def build(parser) -> None:
    add_run_arguments(parser)
    parser.add_argument("--work-root", type=Path, help="the agent's clone is made under it")
    parser.add_argument("--clone", type=Path, help="make the agent's clone here instead")
    parser.add_argument("--out", type=Path, help="the run folder: every file below in its place")
    for name, help_text in FILE_OPTIONS.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=Path, help=help_text)
    parser.add_argument("--harnesses-dir", type=Path, required=True, help="pinned installs")
    parser.add_argument("--mirrors-dir", type=Path, required=True, help="local etalon mirrors")
    parser.add_argument("--credentials", type=Path, help="TOML file with provider API keys")
    parser.add_argument(
        "--confinement",
        choices=MODES,
        default=BWRAP,
        help="bwrap (default): the agent runs in a sandbox; none: unconfined (config/config.yaml)",
    )
    parser.add_argument(
        "--provider-endpoint",
        action="append",
        default=[],
        metavar="PROVIDER=URL",
        help="where a real provider is reached (default its own API); repeat per provider",
    )


def run_files(args) -> RunFiles:
    folder = RunFolder(args.out) if args.out else None
    paths = {}
    for name in FILE_OPTIONS:
        given = getattr(args, name)
        if given is None and folder is None:
            raise SystemExit(f"--{name.replace('_', '-')} or --out is required")
        attribute = "agent_lock" if name == "lock" else name
        paths[name] = (given or getattr(folder, attribute)).absolute()
    return RunFiles(**paths)


def provider_endpoints(given: list[str]) -> dict[str, str]:
    endpoints = {}
    for item in given:
        provider, separator, url = item.partition("=")
        if not separator or not provider or not url:
            raise SystemExit(f"--provider-endpoint {item!r}: write PROVIDER=URL")
        endpoints[provider] = url
    return endpoints


def act(args) -> int:
    require_sandbox(args.confinement)
    scenario = load_scenario_for_step(args.scenario, check_bricks=True)
    cell = scenario.run_cell(args.cell)
    files = run_files(args)
    spending = RunSpending(scenario, cell, args.rep, files)
    if not spending.start():
        # Not a failed job: the run's files say it was not started, and why (exit 0). An
        # agent a killed workflow left must not spend on: it is ended first.
        end_stale_twin(files.lock)
        record = spending.refuse()
        print(f"{record['run']}: {record['outcome']['reason']}")
        return 0
    try:
        record = perform_run(
            scenario,
            cell,
            args.rep,
            files=files,
            work_root=args.work_root or Path(".agentab/work"),
            clone=args.clone,
            harnesses_dir=args.harnesses_dir,
            mirrors_dir=args.mirrors_dir,
            credentials=args.credentials,
            provider_endpoints=provider_endpoints(args.provider_endpoint),
            confinement=args.confinement,
        )
    except BaseException:
        spending.ended()  # a fault or a stop: what its requests cost replaces its reservation
        raise
    spending.ran(record)
    outcome = record["outcome"]
    reason = f" ({outcome['reason']})" if outcome["reason"] else ""
    print(f"{record['run']}: {outcome['status']}{reason}")
    return 0


def ended(args) -> str:
    return (
        f"the agent of run {run_id(args.cell, args.rep)} was ended; this run has no outcome "
        "and is redone on the next invocation"
    )


if __name__ == "__main__":
    run_step(build, act, ended)
