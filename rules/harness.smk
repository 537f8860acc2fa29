# The pinned agent CLIs, each installed once into the project (shared storage on a cluster).


# On the login node: compute nodes often reach no package registry; the install still lands
# on shared storage, where every job finds it.
localrules:
    install_harness,


rule install_harness:
    output:
        str(LAYOUT.harness_marker("{harness}", "{version}")),
    log:
        str(LAYOUT.install_log("{harness}", "{version}")),
    conda:
        "../envs/agentab.yaml"
    shell:
        "{PY:q} -m agentab.steps.install --harness {wildcards.harness} "
        "--version {wildcards.version} --harnesses-dir {HARNESSES:q} > {log:q} 2>&1"
