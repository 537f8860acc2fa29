# One validator on one run, in its own checkout of etalon + result.patch (never the clone:
# editing a validator must not rerun an agent run). Its params are that validator only.


rule validate_run:
    input:
        run=run_file("run.json"),
        stream=run_file("stream.jsonl"),
        patch=run_file("result.patch"),
    output:
        run_file("validators", "{validator}.json"),
    log:
        run_file("logs", "validate-{validator}.log"),
    group:
        "run"
    conda:
        "../envs/agentab.yaml"
    resources:
        runtime=lambda w: PLAN.validator_minutes(w.scenario, w.validator),
    params:
        validator=lambda w: PLAN.validator_params(w.scenario, w.validator),
        scenario=scenario_file,
        rep=rep_number,
        run_dir=lambda w: run_file().format(**w),
        scratch=lambda w: state("scratch", w.scenario, w.cell, w.rep, w.validator),
    shell:
        "{PY:q} -m agentab.steps.validate --scenario {params.scenario:q} --cell {wildcards.cell} "
        "--rep {params.rep} --validator {wildcards.validator:q} --run-dir {params.run_dir:q} "
        "--scratch-dir {params.scratch:q} --mirrors-dir {STATE:q}/mirrors "
        "--settings {JUDGE_SETTINGS:q} > {log:q} 2>&1"
