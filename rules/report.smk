# The HTML report of each scenario, built after its synthesis from the same files. The
# Snakefile's handlers start and stop the progress line (runs measured, faults, time, tokens).
from agentab.report.hooks import (
    report_code,
    report_targets,
    start_run_progress,
    stop_run_progress,
)


localrules:
    report,


rule report:
    input:
        synthesis=[result("{scenario}", name) for name in SYNTHESIS_FILES],
        measures=lambda w: PLAN.all_measures(w.scenario),
        code=report_code(),
    output:
        result("{scenario}", "report", "index.html"),
    log:
        result("{scenario}", "logs", "report.log"),
    conda:
        "../envs/agentab.yaml"
    params:
        results_dir=lambda w: result(w.scenario),
    script:
        "../scripts/report.py"
