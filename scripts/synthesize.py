# Rule synthesize: rebuild every output from the frozen scenario and the measures.json files.
from agentab.steps.script_start import stop_quietly_while_starting

stop_quietly_while_starting("synthesize")
from agentab.steps.common import run_in_script  # noqa: E402 - after the handlers, on purpose

run_in_script(snakemake, ["synthesize", snakemake.params.results_dir])  # noqa: F821
