# measures.json per run: the metric contract applied to the validators' outputs and to any
# filled form. Editing the contract reruns only these jobs and the synthesis.


rule measure_run:
    input:
        run=run_file("run.json"),
        outputs=lambda w: [
            run_file("validators", f"{v}.json").format(**w)
            for v in PLAN.scored_validators(w.scenario)
        ],
        answers=lambda w: PLAN.filled_forms(w.scenario),
    output:
        run_file("measures.json"),
    log:
        run_file("logs", "measure.log"),
    group:
        "run"
    conda:
        "../envs/agentab.yaml"
    params:
        contract=lambda w: PLAN.measure_params(w.scenario),
        scenario=scenario_file,
        rep=rep_number,
        run_dir=lambda w: run_file().format(**w),
        results_dir=lambda w: result(w.scenario),
    shell:
        "{PY:q} -m agentab.steps.measure --scenario {params.scenario:q} --cell {wildcards.cell} "
        "--rep {params.rep} --run-dir {params.run_dir:q} --results-dir {params.results_dir:q} "
        "> {log:q} 2>&1"


# A filled form is checked once (types, fills, ids, metrics other validators produce), against
# every run's validator outputs; the measure jobs then read its checked answers.
localrules:
    ingest_form,


rule ingest_form:
    input:
        form=result("{scenario}", "forms", "{validator}.toml"),
        outputs=lambda w: PLAN.all_validator_outputs(w.scenario),
    output:
        result("{scenario}", ".form-keys", "{validator}.answers.json"),
    log:
        result("{scenario}", "logs", "ingest-{validator}.log"),
    conda:
        "../envs/agentab.yaml"
    params:
        scenario=scenario_file,
        results_dir=lambda w: result(w.scenario),
    shell:
        "{PY:q} -m agentab.steps.ingest_form --scenario {params.scenario:q} "
        "--validator {wildcards.validator:q} --results-dir {params.results_dir:q} > {log:q} 2>&1"
