# The synthesis, rebuilt from the frozen scenario and the measures.json files alone, and the
# blank forms for the people who fill form validators. Cheap: they run where Snakemake runs.


localrules:
    all,
    freeze_scenario,
    synthesize,
    form_blank,


rule synthesize:
    input:
        frozen=result("{scenario}", "scenario.toml"),
        measures=lambda w: PLAN.all_measures(w.scenario),
        code=PLAN.synthesis_code(),
    output:
        [result("{scenario}", name) for name in SYNTHESIS_FILES],
    log:
        result("{scenario}", "logs", "synthesize.log"),
    conda:
        "../envs/agentab.yaml"
    params:
        results_dir=lambda w: result(w.scenario),
    script:
        "../scripts/synthesize.py"


rule form_blank:
    input:
        measures=lambda w: PLAN.all_measures(w.scenario),
    output:
        result("{scenario}", "forms", "{validator}.blank.toml"),
    log:
        result("{scenario}", "logs", "form-{validator}.log"),
    conda:
        "../envs/agentab.yaml"
    params:
        results_dir=lambda w: result(w.scenario),
    script:
        "../scripts/form_blank.py"
