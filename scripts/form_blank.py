# Rule form_blank: write (or extend) the blind blank form of one form validator.
from agentab.steps.script_start import stop_quietly_while_starting

stop_quietly_while_starting("form")
from agentab.steps.common import run_in_script  # noqa: E402 - after the handlers, on purpose

run_in_script(  # noqa: F821 - Snakemake injects the `snakemake` object
    snakemake,  # noqa: F821
    ["form", "blank", snakemake.params.results_dir, "--validator", snakemake.wildcards.validator],  # noqa: F821
)
