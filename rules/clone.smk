# The frozen scenario, and a fresh clone of the etalon tag per run (a temporary output: it
# is gone once the run's patch is taken, and only an agent rerun needs it again).


rule freeze_scenario:
    input:
        scenario_file,
    output:
        RESULTS + "/{scenario}/scenario.toml",
    log:
        RESULTS + "/{scenario}/logs/freeze.log",
    shell:
        "{PY:q} -m agentab.steps.freeze --scenario {input:q} --out {output:q} > {log:q} 2>&1"


rule clone_etalon:
    input:
        # ancient: the frozen copy must exist before the first run, but rewriting it (an
        # edited validator, say) must not reclone and rerun every agent run.
        frozen=ancient(RESULTS + "/{scenario}/scenario.toml"),
    output:
        temp(directory(STATE + "/clones/{scenario}/{cell}/{rep}")),
    params:
        scenario=scenario_file,
    log:
        RUN + "/logs/clone.log",
    group:
        "run"
    shell:
        "{PY:q} -m agentab.steps.clone --scenario {params.scenario:q} --out {output:q} "
        "--mirrors-dir {STATE:q}/mirrors > {log:q} 2>&1"
