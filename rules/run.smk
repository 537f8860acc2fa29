# One agent run: the pinned harness on the fresh clone, its raw stream kept byte for byte,
# and the patch of its work against the tag. Its params are the cell's run configuration
# only (agent fields, prompt digest, brick digests): nothing about validators.


rule run_agent:
    input:
        clone=STATE + "/clones/{scenario}/{cell}/{rep}",
        harness=lambda w: ancient(PLAN.harness_marker(w.scenario, w.cell)),
    output:
        run=RUN + "/run.json",
        stream=RUN + "/stream.jsonl",
        patch=RUN + "/result.patch",
    params:
        run_config=lambda w: PLAN.run_params(w.scenario, w.cell),
        scenario=scenario_file,
        rep=rep_number,
        run_dir=lambda w: RUN.format(**w),
    resources:
        agent_slots=1,
        runtime=lambda w: PLAN.timeout_minutes(w.scenario, w.cell),
    log:
        RUN + "/logs/run.log",
    benchmark:
        RUN + "/logs/run.benchmark.tsv"
    group:
        "run"
    shell:
        "{PY:q} -m agentab.steps.run --scenario {params.scenario:q} --cell {wildcards.cell} "
        "--rep {params.rep} --clone {input.clone:q} --out {params.run_dir:q} "
        "--harnesses-dir {HARNESSES:q} --mirrors-dir {STATE:q}/mirrors > {log:q} 2>&1"
