# One agent run: a fresh clone of the etalon tag (made by the step, in a folder with a random
# name, and removed after), the pinned harness in it, its raw stream kept byte for byte, its
# transcript, the requests that reached the model, and the patch of its work. Its params are
# the cell's run configuration only (agent fields, prompt digest, brick digests).


rule run_agent:
    input:
        harness=lambda w: ancient(WORKFLOW.harness_marker(w.scenario, w.cell)),
    output:
        record=run_file("record"),
        stream=run_file("stream"),
        transcript=run_file("transcript"),
        patch=run_file("patch"),
        model_requests=run_file("model_requests"),
        receipt=run_file("receipt"),
    log:
        run_file("log", "run"),
    benchmark:
        run_file("benchmark", "run")
    group:
        "run"
    conda:
        "../envs/agentab.yaml"
    resources:
        **PROVIDER_SLOTS,
        agent_slots=1,
        runtime=lambda w: WORKFLOW.timeout_minutes(w.scenario, w.cell),
    params:
        run_config=lambda w: WORKFLOW.run_params(w.scenario, w.cell),
        scenario=scenario_file,
        rep=rep_number,
        stderr=run_file("agent_stderr"),
        lock=run_file("agent_lock"),
        earlier=run_file("earlier_attempts"),
        faults=run_file("faults"),
    shell:
        "{PY:q} -m agentab.steps.run --scenario {params.scenario:q} --cell {wildcards.cell} "
        "--rep {params.rep} --work-root {WORK:q} --record {output.record:q} "
        "--stream {output.stream:q} --transcript {output.transcript:q} "
        "--patch {output.patch:q} --model-requests {output.model_requests:q} "
        "--receipt {output.receipt:q} "
        "--agent-stderr {params.stderr:q} --lock {params.lock:q} "
        "--earlier-attempts {params.earlier:q} --faults {params.faults:q} "
        "--harnesses-dir {HARNESSES:q} --mirrors-dir {MIRRORS:q} {CREDENTIALS} {ENDPOINTS}{CONFINEMENT} "
        "> {log:q} 2>&1"
