# The HTML report of each scenario, built after its synthesis from the same files. The
# Snakefile's handlers start and stop the progress line (runs measured, faults, time, tokens).
from agentab.report.hooks import (
    synthesize_what_ran,
    failure_advice,
    report_code,
    report_targets,
    start_run_progress,
    stop_run_progress,
)


localrules:
    report,


rule report:
    input:
        synthesis=[str(path) for path in LAYOUT.results("{scenario}").outputs()],
        measures=given_measures,
        code=report_code(),
    output:
        str(LAYOUT.results("{scenario}").report / "index.html"),
    log:
        str(LAYOUT.results("{scenario}").log("report")),
    conda:
        "../envs/agentab.yaml"
    params:
        results_dir=results_folder,
    script:
        "../scripts/report.py"
