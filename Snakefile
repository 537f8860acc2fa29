# agentab: scenario -> clone -> agent run -> validators -> measures.json -> synthesis.
# Every decision is made by the `agentab` package; the rules only ask it and call its steps.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "rules/common.smk"
include: "rules/harness.smk"
include: "rules/freeze.smk"
include: "rules/run.smk"
include: "rules/validate.smk"
include: "rules/measure.smk"
include: "rules/waves.smk"
include: "rules/aggregate.smk"
include: "rules/report.smk"


onstart:
    hold_results_folders(WORKFLOW)
    record_invocation(WORKFLOW, sys.argv)
    pass_stop_signals_to_steps()
    start_step_server(workflow, WORKFLOW)
    start_run_progress(WORKFLOW, workflow)


onsuccess:
    stop_step_server()
    stop_run_progress()
    print(measured_summary(WORKFLOW))


onerror:
    stop_step_server()
    stop_run_progress()
    print(measured_summary(WORKFLOW))
    for line in synthesize_what_ran(WORKFLOW):
        print(line)
    print(failure_advice(log, WORKFLOW))


rule all:
    default_target: True
    input:
        WORKFLOW.targets(),
        report_targets(WORKFLOW),


# Last: every rule exists now.
state_signatures_once(workflow.rules)
