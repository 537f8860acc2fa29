# The synthesis, rebuilt from the frozen scenario and the measures.json files alone, and the
# blank forms for the people who fill form validators. Cheap: they run where Snakemake runs.


localrules:
    all,
    freeze_scenario,
    synthesize,
    form_blank,


rule synthesize:
    input:
        frozen=results_file("frozen_scenario"),
        measures=lambda w: WORKFLOW.all_measures(w.scenario),
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
        measures=lambda w: WORKFLOW.all_measures(w.scenario),
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
