# One validator on one run, in its own checkout of etalon + result.patch (never the clone:
# editing a validator must not rerun an agent run). Its params are that validator only.


rule validate_run:
    input:
        record=run_file("record"),
        transcript=run_file("transcript"),
        patch=run_file("patch"),
    output:
        run_file("validator_output", "{validator}"),
    log:
        run_file("log", "validate-{validator}"),
    group:
        "run"
    conda:
        "../envs/agentab.yaml"
    resources:
        runtime=lambda w: WORKFLOW.validator_minutes(w.scenario, w.validator),
    params:
        validator=lambda w: WORKFLOW.validator_params(w.scenario, w.validator),
        scenario=scenario_file,
        rep=rep_number,
        audit=run_file("validator_audit", "{validator}"),
        lock=run_file("validator_lock", "{validator}"),
        secret=results_file("secret"),
    shell:
        "{PY:q} -m agentab.steps.validate --scenario {params.scenario:q} --cell {wildcards.cell} "
        "--rep {params.rep} --validator {wildcards.validator:q} --record {input.record:q} "
        "--transcript {input.transcript:q} --patch {input.patch:q} --out {output:q} "
        "--audit {params.audit:q} --lock {params.lock:q} --secret {params.secret:q} "
        "--work-root {WORK:q} --mirrors-dir {MIRRORS:q} --settings {JUDGE_SETTINGS:q}{CONFINEMENT} "
        "> {log:q} 2>&1"
