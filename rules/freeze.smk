# The frozen scenario: the scenario exactly as it was run, written before the first run.


# The highest priority: the frozen copy is written before the first agent run starts. It is
# not an input of the clone (even as ancient): Snakemake 9.27 skips the params check of every
# job downstream of a job that must rerun, so an edited scenario would then hide an edited
# metric contract from the measure jobs.
rule freeze_scenario:
    input:
        scenario_file,
    output:
        results_file("frozen_scenario"),
    log:
        str(LAYOUT.results("{scenario}").log("freeze")),
    priority: 100
    conda:
        "../envs/agentab.yaml"
    shell:
        "{PY:q} -m agentab.steps.freeze --scenario {input:q} --out {output:q} > {log:q} 2>&1"
