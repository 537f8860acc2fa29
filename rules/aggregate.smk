# The synthesis, rebuilt from the frozen scenario and the measures.json files alone, and the
# blank forms for the people who fill form validators. Cheap: they run where Snakemake runs.


localrules:
    all,
    decide_wave,
    freeze_scenario,
    synthesize,
    form_blank,


rule synthesize:
    input:
        frozen=results_file("frozen_scenario"),
        measures=given_measures,
        code=WORKFLOW.synthesis_code(),
    output:
        [str(path) for path in LAYOUT.results("{scenario}").outputs()],
    log:
        str(LAYOUT.results("{scenario}").log("synthesize")),
    conda:
        "../envs/agentab.yaml"
    params:
        results_dir=results_folder,
    script:
        "../scripts/synthesize.py"


rule form_blank:
    input:
        measures=given_measures,
    output:
        str(LAYOUT.results("{scenario}").blank_form("{validator}")),
    log:
        str(LAYOUT.results("{scenario}").log("form-{validator}")),
    conda:
        "../envs/agentab.yaml"
    params:
        results_dir=results_folder,
    script:
        "../scripts/form_blank.py"
