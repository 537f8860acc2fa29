# Shared by every rule: the checked config, the workflow the package makes from the scenarios,
# and the paths, all asked of agentab.layout. A scenario with a problem stops here, before
# anything runs.
import shlex
import sys
from pathlib import Path

from snakemake.utils import validate

from agentab.errors import AgentabError
from agentab.workflow.holding import hold_results_folders
from agentab.workflow.capacity import cap_resources
from agentab.workflow.config_check import check_config
from agentab.workflow.invocation import record_invocation
from agentab.workflow.output import shape_output
from agentab.workflow.repair import dry_run_asked, repair_on_start
from agentab.workflow.step_server import start_step_server, stop_step_server
from agentab.workflow.stopping import pass_stop_signals_to_steps
from agentab.workflow.targets import (
    Workflow,
    as_param,
    measured_summary,
    state_signatures_once,
)

try:
    # Every problem on a line of its own, with its fix; then Snakemake fills the defaults.
    check_config(config, Path(workflow.basedir) / "config" / "config.schema.yaml")
    validate(config, schema="../config/config.schema.yaml")
    WORKFLOW = Workflow.from_config(config)
except AgentabError as error:
    sys.stderr.write(f"agentab: nothing runs.\n{error.render()}\n")
    raise SystemExit(2)

LAYOUT = WORKFLOW.layout
# The interpreter that runs Snakemake has agentab installed: every step uses it, on this
# machine or on a cluster node that shares the filesystem.
PY = sys.executable
HARNESSES = str(LAYOUT.harnesses)
MIRRORS = str(LAYOUT.mirrors)
WORK = str(LAYOUT.work)
# Where API keys live, for real providers: a path on the command line, never a key.
CREDENTIALS = WORKFLOW.credentials_argument()
# Where real providers are reached (their recording proxy forwards there): operational too.
ENDPOINTS = WORKFLOW.provider_endpoints_argument()
# Whether the agent and validator scripts run in a sandbox: nothing at all by default.
CONFINEMENT = WORKFLOW.confinement_argument()
# How judges reach their model (key file, endpoint, patience): operational, so it is not a
# param: moving the key file must not rerun every judge.
JUDGE_SETTINGS = as_param(WORKFLOW.judge_settings())


def results(*parts):
    """results/<scenario>/…, with wildcards passed through."""
    folder = LAYOUT.results("{scenario}")
    return str(folder.path.joinpath(*parts)) if parts else str(folder.path)


def results_folder(wildcards):
    """results/<scenario>/ of a job, as a param (a function: Snakemake's linter asks that a
    param naming an output's folder is not a hard-coded string)."""
    return results().format(**wildcards)


def results_file(name):
    """A file of results/<scenario>/, by its layout name (frozen_scenario, report, …)."""
    return str(getattr(LAYOUT.results("{scenario}"), name))


def run_file(name, *args):
    """A file of one run's folder, by its layout name: run_file("record"), run_file("log", "run").

    As a param too: Snakemake fills a string's wildcards itself, where a function would be
    inspected and called once per job (at 10 000 runs, the cost that shows in a dry run).
    """
    attribute = getattr(LAYOUT.run("{scenario}", "{cell}", "{rep}"), name)
    return str(attribute(*args) if callable(attribute) else attribute)


wildcard_constraints:
    scenario=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    cell=r"[a-z0-9]+(-[a-z0-9]+)*(--[a-z0-9]+(-[a-z0-9]+)*)?",
    rep=r"r[0-9][0-9]+",
    validator=r"[^/]+",
    harness=r"[a-z0-9_-]+",


def rep_number(wildcards):
    return int(wildcards.rep[1:])


def scenario_file(wildcards):
    return WORKFLOW.scenario_file(wildcards.scenario)


# Each scenario's scored validator outputs of one run, spelled once: a measure job's inputs.
VALIDATOR_OUTPUTS = {
    name: [run_file("validator_output", v) for v in WORKFLOW.scored_validators(name)]
    for name in WORKFLOW.scenarios
}


def validator_outputs(wildcards):
    return [path.format(**wildcards) for path in VALIDATOR_OUTPUTS[wildcards.scenario]]


# A model server's declared concurrency caps the agent runs against it at once: a resource per
# server, which each of its runs holds one of (agentab.workflow.capacity).


def provider_slot(resource):
    return lambda wildcards: WORKFLOW.provider_slot(
        wildcards.scenario, wildcards.cell, resource
    )


PROVIDER_SLOTS = {name: provider_slot(name) for name in WORKFLOW.provider_resources()}
if workflow.is_main_process:
    for line in cap_resources(workflow, WORKFLOW.server_caps):
        print(line, file=sys.stderr)

# The terminal shows agentab's lines and an expected fault's one line; Snakemake's log on disk
# keeps its full listing (agentab.workflow.output).
if workflow.is_main_process:
    shape_output(dry_run_asked(sys.argv))

# A per-run file that is missing, unreadable or malformed is removed with what depends on it,
# and the synthesis made due, so that this invocation redoes exactly that. A dry run only tells.
repair_on_start(workflow, WORKFLOW, sys.argv)
