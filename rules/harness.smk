# The pinned agent CLI, installed once into the project (shared storage on a cluster).


rule install_harness:
    output:
        HARNESSES + "/{harness}/{version}/installed.json",
    log:
        STATE + "/logs/install-{harness}-{version}.log",
    shell:
        "{PY:q} -m agentab.steps.install --harness {wildcards.harness} "
        "--version {wildcards.version} --harnesses-dir {HARNESSES:q} > {log:q} 2>&1"
