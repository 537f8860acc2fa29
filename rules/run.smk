# One agent run: the pinned harness on the fresh clone, its raw stream kept byte for byte,
# and the patch of its work against the tag. Its params are the cell's run configuration
# only (agent fields, prompt digest, brick digests): nothing about validators.


rule run_agent:
    input:
        clone=state("clones", "{scenario}", "{cell}", "{rep}"),
        harness=lambda w: ancient(PLAN.harness_marker(w.scenario, w.cell)),
    output:
        run=run_file("run.json"),
        stream=run_file("stream.jsonl"),
        patch=run_file("result.patch"),
    log:
        run_file("logs", "run.log"),
    benchmark:
        run_file("logs", "run.benchmark.tsv")
    group:
        "run"
    conda:
        "../envs/agentab.yaml"
    resources:
        agent_slots=1,
        runtime=lambda w: PLAN.timeout_minutes(w.scenario, w.cell),
    params:
        run_config=lambda w: PLAN.run_params(w.scenario, w.cell),
        scenario=scenario_file,
        rep=rep_number,
        run_dir=lambda w: run_file().format(**w),
    shell:
        "{PY:q} -m agentab.steps.run --scenario {params.scenario:q} --cell {wildcards.cell} "
        "--rep {params.rep} --clone {input.clone:q} --out {params.run_dir:q} "
        "--harnesses-dir {HARNESSES:q} --mirrors-dir {STATE:q}/mirrors {CREDENTIALS} "
        "> {log:q} 2>&1"
