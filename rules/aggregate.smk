# The synthesis, rebuilt from the frozen scenario and the measures.json files alone, and the
# blank forms for the people who fill form validators. Cheap: they run where Snakemake runs.


localrules:
    all,
    freeze_scenario,
    synthesize,
    form_blank,


rule synthesize:
    input:
        frozen=RESULTS + "/{scenario}/scenario.toml",
        measures=lambda w: PLAN.all_measures(w.scenario),
        code=PLAN.synthesis_code(),
    output:
        [RESULTS + "/{scenario}/" + name for name in SYNTHESIS_FILES],
    log:
        RESULTS + "/{scenario}/logs/synthesize.log",
    shell:
        "{PY:q} -m agentab.cli synthesize {RESULTS:q}/{wildcards.scenario} > {log:q} 2>&1"


rule form_blank:
    input:
        measures=lambda w: PLAN.all_measures(w.scenario),
    output:
        RESULTS + "/{scenario}/forms/{validator}.blank.toml",
    log:
        RESULTS + "/{scenario}/logs/form-{validator}.log",
    shell:
        "{PY:q} -m agentab.cli form blank {RESULTS:q}/{wildcards.scenario} "
        "--validator {wildcards.validator:q} > {log:q} 2>&1"
