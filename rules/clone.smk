# The frozen scenario, and a fresh clone of the etalon tag per run (a temporary output: it
# is gone once the run's patch is taken, and only an agent rerun needs it again).


# The highest priority: the frozen copy is written before the first agent run starts. It is
# not an input of the clone (even as ancient): Snakemake 9.27 skips the params check of every
# job downstream of a job that must rerun, so an edited scenario would then hide an edited
# metric contract from the measure jobs.
rule freeze_scenario:
    input:
        scenario_file,
    output:
        result("{scenario}", "scenario.toml"),
    log:
        result("{scenario}", "logs", "freeze.log"),
    priority: 100
    conda:
        "../envs/agentab.yaml"
    shell:
        "{PY:q} -m agentab.steps.freeze --scenario {input:q} --out {output:q} > {log:q} 2>&1"


rule clone_etalon:
    output:
        temp(directory(state("clones", "{scenario}", "{cell}", "{rep}"))),
    log:
        run_file("logs", "clone.log"),
    group:
        "run"
    conda:
        "../envs/agentab.yaml"
    params:
        scenario=scenario_file,
    shell:
        "{PY:q} -m agentab.steps.clone --scenario {params.scenario:q} --out {output:q} "
        "--mirrors-dir {STATE:q}/mirrors > {log:q} 2>&1"
