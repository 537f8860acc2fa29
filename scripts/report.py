# Rule report: the static HTML report of a results folder, after its synthesis.
from agentab.steps.common import run_in_script

run_in_script(snakemake, ["report", snakemake.params.results_dir])  # noqa: F821
