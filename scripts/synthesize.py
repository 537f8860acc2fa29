# Rule synthesize: rebuild every output from the frozen scenario and the measures.json files.
from agentab.steps.common import run_in_script

run_in_script(snakemake, ["synthesize", snakemake.params.results_dir])  # noqa: F821
