# Shared by every rule: the checked config, the plan of runs the package makes from the
# scenarios, and the paths. A scenario with a problem stops here, before anything runs.
import sys

from snakemake.utils import validate

from agentab.errors import AgentabError
from agentab.workflow import SYNTHESIS_FILES, Plan, as_param, measured_summary

validate(config, schema="../config/config.schema.yaml")

try:
    PLAN = Plan.from_config(config)
except AgentabError as error:
    sys.stderr.write(f"agentab: nothing runs.\n{error.render()}\n")
    raise SystemExit(2)

# The interpreter that runs Snakemake has agentab installed: every step uses it, on this
# machine or on a cluster node that shares the filesystem.
PY = sys.executable
RESULTS = str(PLAN.results)
STATE = str(PLAN.state)
HARNESSES = str(PLAN.harnesses)
# Where API keys live, for real providers: a path on the command line, never a key.
CREDENTIALS = PLAN.credentials_argument()
# How judges reach their model (key file, endpoint, patience): operational, so it is not a
# param: moving the key file must not rerun every judge.
JUDGE_SETTINGS = as_param(PLAN.judge_settings())


def result(*parts):
    """A path under results/ (paths are joined, never concatenated)."""
    return str(PLAN.results.joinpath(*parts))


def run_file(*parts):
    """A path in one run's folder: results/<scenario>/runs/<cell>/r<NN>/..."""
    return result("{scenario}", "runs", "{cell}", "{rep}", *parts)


def state(*parts):
    return str(PLAN.state.joinpath(*parts))


def harness_file(*parts):
    return str(PLAN.harnesses.joinpath(*parts))


wildcard_constraints:
    scenario=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    cell=r"[a-z0-9]+(-[a-z0-9]+)*",
    rep=r"r[0-9][0-9]+",
    validator=r"[^/]+",
    harness=r"[a-z0-9_-]+",


def rep_number(wildcards):
    return int(wildcards.rep[1:])


def scenario_file(wildcards):
    return PLAN.scenario_file(wildcards.scenario)
