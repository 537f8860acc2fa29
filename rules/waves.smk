# Sequential stopping ([protocol] stopping = "sequential"): a checkpoint after each wave
# decides which cells get the next one, so the job graph follows the decisions. A fixed
# scenario has no waves: its synthesis asks for every run, as before.
from agentab.workflow.waves import next_wave_cells as read_next_wave_cells


wildcard_constraints:
    wave=r"[0-9]+",


def next_wave_cells(scenario, wave):
    """The cells that get `wave`: every cell the first, then what the checkpoint after the
    wave before decided (asking for it makes Snakemake run that wave first)."""
    if wave == 1:
        return WORKFLOW.cell_names(scenario)
    decision = checkpoints.decide_wave.get(scenario=scenario, wave=wave - 1).output[0]
    return read_next_wave_cells(WORKFLOW, scenario, wave, decision)


def wave_inputs(wildcards):
    wave = int(wildcards.wave)
    cells = next_wave_cells(wildcards.scenario, wave)
    return WORKFLOW.wave_measures(wildcards.scenario, wave, cells)


def given_measures(wildcards):
    """Every run the scenario was given: all of them, or with waves the runs of each wave the
    decisions gave, and each wave's decision (the synthesis replays them)."""
    scenario = wildcards.scenario
    if not WORKFLOW.is_sequential(scenario):
        return WORKFLOW.all_measures(scenario)
    files = []
    for wave in range(1, WORKFLOW.wave_count(scenario) + 1):
        cells = next_wave_cells(scenario, wave)
        if not cells:
            break
        files += WORKFLOW.wave_measures(scenario, wave, cells)
        files.append(WORKFLOW.wave_decision(scenario, wave))
    return files


checkpoint decide_wave:
    input:
        measures=wave_inputs,
        frozen=results_file("frozen_scenario"),
    output:
        str(LAYOUT.results("{scenario}").wave_decision("{wave}")),
    log:
        str(LAYOUT.results("{scenario}").log("decide-wave-{wave}")),
    conda:
        "../envs/agentab.yaml"
    params:
        results_dir=results_folder,
    shell:
        "{PY:q} -m agentab.steps.decide_wave --results {params.results_dir:q} "
        "--wave {wildcards.wave} --out {output:q} > {log:q} 2>&1"
