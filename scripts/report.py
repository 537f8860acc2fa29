# Rule report: the static HTML report of a results folder, after its synthesis.
from agentab.steps.script_start import stop_quietly_while_starting

stop_quietly_while_starting("report")
from agentab.steps.common import run_in_script  # noqa: E402 - after the handlers, on purpose

run_in_script(snakemake, ["report", snakemake.params.results_dir])  # noqa: F821
