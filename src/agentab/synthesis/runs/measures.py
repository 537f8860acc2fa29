"""measures.json: one per run, the unit every table and verdict is rebuilt from.

A run is `failed` when the agent's run ended as an outcome that cannot be scored (timeout, the
agent's own error), `invalid` when a validator could not score it or the metric contract is not
met, and `valid` otherwise. Metrics a form has not been filled for yet are `pending`: the run
stays valid and the metric simply has no value yet.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from agentab.budget import BUDGET_REACHED, NOT_STARTED
from agentab.files import write_json, write_sealed_json
from agentab.layout import RunFolder, run_id
from agentab.runfiles import MEASURES_VERSION, RUN_VERSION, MeasuresJson, schema_version
from agentab.scenario import Cell, Scenario
from agentab.synthesis.runs.builtin import builtin_metrics, protected_paths
from agentab.synthesis.runs.integrity import (
    changed_problem,
    read_secret,
    relative_name,
    unsealed_contents,
)
from agentab.synthesis.runs.tool_failures import failed_calls
from agentab.synthesis.runs.usage import builtin_value
from agentab.trajectory import behaviour_measures, write_trajectory

ANSWERS_SUFFIX = ".answers.json"


def provenance(run: dict) -> dict:
    facts = run.get("facts") or {}
    tokens = facts.get("tokens") or {}
    return {
        "etalon_sha": (run.get("etalon") or {}).get("sha"),
        "harness": run.get("harness"),
        "harness_version": run.get("harness_version"),
        "provider": run.get("provider"),
        "model": run.get("model"),
        "thinking": run.get("thinking"),
        "argv": run.get("argv", []),
        "started": run.get("started"),
        "duration_s": run.get("duration_s"),
        "tokens": {"input": tokens.get("input", 0), "output": tokens.get("output", 0)},
        "cost_usd": facts.get("cost_usd"),
        "confinement": (run.get("confinement") or {}).get("mode"),
        "limits": run.get("limits"),  # declared, how each was enforced, which the run reached
        "environment_sha256": (run.get("setup") or {}).get("environment_sha256"),
        "inputs": run.get("inputs") or [],  # the policy the run was served, by its hash
    }


def form_metrics(scenario: Scenario) -> dict[str, str]:
    """metric -> the form validator that fills it."""
    return {
        metric: spec.name
        for spec in scenario.validators.values()
        if spec.mode == "form"
        for metric in spec.options.get("fills", [])
    }


def build_measures(
    scenario: Scenario,
    cell: Cell,
    rep: int,
    run: dict,
    outputs: dict[str, dict],
    form_answers: dict[str, dict] | None = None,
    builtin: dict | None = None,
) -> MeasuresJson:
    """Combine a run's record and its validators' outputs into its measures.

    `outputs`: validator name -> its validators/<name>.json (script and judge validators).
    `form_answers`: form validator name -> the answers filled for this run ({} when none yet).
    `builtin`: the run's built-in metrics (`synthesis.builtin`), kept whatever the run's status;
    a contract metric no validator returns is taken from them.
    """
    builtin = builtin or {}
    measures = {
        "schema_version": MEASURES_VERSION,
        "scenario": scenario.name,
        "cell": cell.name,
        "rep": rep,
        "run": run_id(cell.slug, rep),
        **({"task": cell.task} if getattr(cell, "task", "") else {}),
        "status": "valid",
        "metrics": {},
        "extra": {},
        "reasons": {},
        "problems": [],
        "pending": [],
        "provenance": provenance(run),
        "receipt": run.get("receipt"),
        "builtin": builtin,
    }
    outcome = run.get("outcome") or {}
    if outcome.get("status") == NOT_STARTED:
        # Refused by the budget (`[protocol] budget_usd`): listed among the missing runs.
        measures["status"] = NOT_STARTED
        measures["problems"].append(outcome.get("reason") or BUDGET_REACHED)
        return measures
    if outcome.get("status") == "failed":
        measures["status"] = "failed"
        measures["problems"].append(outcome.get("reason") or "the agent's run failed")
        return measures

    receipt = run.get("receipt") or {}
    if receipt.get("delivered") is False:
        # Not scored: the run measured something other than its cell (docs/receipts.md). Not a fault
        # either: a retry would repeat a systematic drop.
        problems = "; ".join(receipt.get("problems") or ["the receipt found no delivery"])
        measures["problems"].append(f"treatment-not-delivered: {problems}")
    returned: dict = {}
    producers: dict[str, str] = {}

    def accept(metric: str, value, producer: str, clash: str) -> None:
        """Keep the first value of a metric; a second producer is a problem, never a winner."""
        if metric in returned:
            measures["problems"].append(clash.format(metric=metric, first=producers[metric]))
            return
        returned[metric] = value
        producers[metric] = producer

    for name, output in outputs.items():
        if not output.get("ok"):
            measures["problems"].append(
                f"validator {name}: {output.get('problem') or 'could not score the run'}"
            )
            continue
        if output.get("reasons"):
            measures["reasons"][name] = output["reasons"]
        for metric, value in output.get("metrics", {}).items():
            accept(
                metric, value, name, f"metric `{{metric}}` is returned by both {{first}} and {name}"
            )
    for name, answers in (form_answers or {}).items():
        for metric, value in answers.items():
            accept(
                metric,
                value,
                name,
                f"form {name}: `{{metric}}` is measured by validator {{first}}; a form may not overwrite it",
            )
    fills = form_metrics(scenario)
    for metric in scenario.metrics:
        if metric in returned and returned[metric] is None:
            measures["problems"].append(
                f"{producers[metric]} returned null for the contract metric `{metric}`: no value"
            )
        elif metric in returned:
            measures["metrics"][metric] = returned[metric]
        elif (found := builtin_value(builtin, metric))[0] is not None:
            measures["metrics"][metric] = found[0]
        elif found[1]:
            measures["problems"].append(f"the run's files do not tell the built-in `{metric}`")
        elif metric in fills:
            measures["pending"].append(metric)
        else:
            measures["problems"].append(f"no validator returned the contract metric `{metric}`")
    measures["extra"] = {k: v for k, v in returned.items() if k not in scenario.metrics}
    if measures["problems"]:
        measures["status"] = "invalid"
    return measures


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def measure_run(
    scenario: Scenario,
    cell: Cell,
    rep: int,
    record: Path,
    outputs: list[Path],
    answers: list[Path],
    out: Path,
) -> dict:
    """Write a run's measures.json from the files the workflow rule hands over.

    A validator's output file is named after it (`<validator>.json`), a form's checked answers
    after the form (`<validator>.answers.json`).
    """
    # Each source is read once: parsed here, its seal and hash checked below.
    sources = {Path(path): Path(path).read_bytes() for path in [record, *outputs]}
    run = json.loads(sources[Path(record)])
    schema_version(run, record, RUN_VERSION)  # a newer agentab's run.json is refused, not misread
    by_validator = {Path(path).stem: json.loads(sources[Path(path)]) for path in outputs}
    run_name = run_id(cell.slug, rep)
    form_answers = {
        Path(path).name.removesuffix(ANSWERS_SUFFIX): read_json(path)["answers"].get(run_name, {})
        for path in answers
    }
    # The transcript is written with run.json, which is written last: it is there when it is.
    # Its trajectory.json is written first, and every measure of how the agent worked is read
    # from that one document, the one a user's scanner reads.
    folder = RunFolder(Path(record).parent)
    trajectory = None
    if folder.transcript.is_file():
        trajectory = write_trajectory(folder.transcript, run, folder.trajectory)
    protected = protected_paths(run, scenario.protect, folder.patch)
    builtin = builtin_metrics(run, trajectory, protected, folder.results.bricks)
    if trajectory is not None:  # the behaviour measures (docs/validators.md) need one
        builtin |= behaviour_measures(trajectory, run, scenario.test_command)
    measures = build_measures(scenario, cell, rep, run, by_validator, form_answers, builtin)
    measures["protected_files"] = protected
    measures["failed_calls"] = failed_calls(trajectory)  # what `tool_errors` counted
    secret = read_secret(folder.results.path)
    if secret is None:  # a folder made by hand, without agentab's secret: nothing is sealed
        write_json(measures, out)
        return measures
    changed = unsealed_contents(sources, secret)
    if changed:
        measures["status"] = "invalid"
        measures["problems"].append(changed_problem(changed))
    measures["inputs"] = {
        relative_name(path): hashlib.sha256(data).hexdigest() for path, data in sources.items()
    }
    write_sealed_json(measures, out, secret)
    return measures
