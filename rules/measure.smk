# measures.json per run: the metric contract applied to the validators' outputs and to any
# filled form. Editing the contract reruns only these jobs and the synthesis.


rule measure_run:
    input:
        record=run_file("record"),
        outputs=validator_outputs,
        answers=lambda w: WORKFLOW.filled_forms(w.scenario),
    output:
        run_file("measures"),
    log:
        run_file("log", "measure"),
    group:
        "run"
    conda:
        "../envs/agentab.yaml"
    params:
        contract=lambda w: WORKFLOW.measure_params(w.scenario),
        scenario=scenario_file,
        rep=rep_number,
        outputs=lambda w, input: " ".join(
            f"--output {shlex.quote(p)}" for p in input.outputs
        ),
        answers=lambda w, input: " ".join(
            f"--answers {shlex.quote(p)}" for p in input.answers
        ),
    shell:
        "{PY:q} -m agentab.steps.measure --scenario {params.scenario:q} --cell {wildcards.cell} "
        "--rep {params.rep} --record {input.record:q} {params.outputs} {params.answers} "
        "--out {output:q} > {log:q} 2>&1"


# A filled form is checked once (types, fills, ids, metrics other validators produce), against
# every run's validator outputs; the measure jobs then read its checked answers.
localrules:
    ingest_form,


rule ingest_form:
    input:
        form=str(LAYOUT.results("{scenario}").filled_form("{validator}")),
        outputs=lambda w: WORKFLOW.all_validator_outputs(w.scenario),
    output:
        str(LAYOUT.results("{scenario}").form_answers("{validator}")),
    log:
        str(LAYOUT.results("{scenario}").log("ingest-{validator}")),
    conda:
        "../envs/agentab.yaml"
    params:
        scenario=scenario_file,
        results_dir=results_folder,
    shell:
        "{PY:q} -m agentab.steps.ingest_form --scenario {params.scenario:q} "
        "--validator {wildcards.validator:q} --results-dir {params.results_dir:q} "
        "--out {output:q} > {log:q} 2>&1"
