# One validator on one run, in its own checkout of etalon + result.patch (never the clone:
# editing a validator must not rerun an agent run). Its params are that validator only.


rule validate_run:
    input:
        run=RUN + "/run.json",
        stream=RUN + "/stream.jsonl",
        patch=RUN + "/result.patch",
    output:
        RUN + "/validators/{validator}.json",
    params:
        validator=lambda w: PLAN.validator_params(w.scenario, w.validator),
        settings=lambda w: as_param(PLAN.judge_settings()),
        scenario=scenario_file,
        rep=rep_number,
        run_dir=lambda w: RUN.format(**w),
        scratch=lambda w: f"{STATE}/scratch/{w.scenario}/{w.cell}/{w.rep}/{w.validator}",
    log:
        RUN + "/logs/validate-{validator}.log",
    group:
        "run"
    shell:
        "{PY:q} -m agentab.steps.validate --scenario {params.scenario:q} --cell {wildcards.cell} "
        "--rep {params.rep} --validator {wildcards.validator:q} --run-dir {params.run_dir:q} "
        "--scratch-dir {params.scratch:q} --mirrors-dir {STATE:q}/mirrors "
        "--settings {params.settings:q} > {log:q} 2>&1"
