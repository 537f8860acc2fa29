"""The workflow's decision layer (`agentab.workflow.targets`): targets, and each rule's own params.

A rule reruns when its params change, so each rule must get only its own slice of the
scenario: these tests pin which edit reaches which params."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.workflow.targets import Workflow

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
DEMO = SCENARIOS / "demo" / "scenario.toml"


def workflow(*paths: Path, **config) -> Workflow:
    return Workflow.from_config(
        {"scenarios": [str(p) for p in paths], "results": "results", "state": ".agentab", **config}
    )


def test_targets_are_the_synthesis_and_the_blank_forms_of_every_scenario():
    targets = workflow(DEMO).targets()
    assert "results/demo/synthesis.md" in targets and "results/demo/gaps.csv" in targets
    assert "results/demo/forms/review.blank.toml" in targets
    assert len(workflow(DEMO).all_measures("demo")) == 4 * 10


def test_an_agent_runs_params_name_no_validator_and_differ_by_cell():
    flow = workflow(DEMO)
    plain, rule = (json.loads(flow.run_params("demo", c)) for c in ("nothing-off", "rule-off"))
    assert "validator" not in json.dumps(plain) and "tests" not in json.dumps(plain)
    assert plain["bricks"] == [] and rule["bricks"][0]["rel"] == "bricks/run-tests.md"
    assert plain["etalon"] == rule["etalon"] == {"repo": "calc.bundle", "tag": "v1.0"}


def test_a_validators_params_are_its_own_table_and_files_only():
    flow = workflow(DEMO)
    tests = json.loads(flow.validator_params("demo", "tests"))
    assert tests["validator"]["name"] == "tests" and tests["files"] == {}  # agentab's own runner
    assert tests["validator"]["tests"] == ["test_calc.py"] and "**/conftest.py" in tests["protect"]
    behaviour = json.loads(flow.validator_params("demo", "behaviour"))
    assert list(behaviour["files"]) == ["validators/behaviour.py"]
    assert flow.validator_params("demo", "tests") != flow.validator_params("demo", "scope")
    assert json.loads(flow.measure_params("demo"))["metrics"][0] == "tests_pass"
    assert flow.scored_validators("demo") == ["tests", "behaviour", "scope", "on_task"]
    assert flow.form_validators("demo") == ["review", "people"]


def test_each_cell_waits_for_its_own_harness_install():
    flow = workflow(SCENARIOS / "harness-axis" / "scenario.toml")
    name = next(iter(flow.scenarios))
    markers = {flow.harness_marker(name, cell.slug) for cell in flow.scenarios[name].cells}
    assert {Path(m).parts[-3] for m in markers} == {"pi", "claude-code"}


def test_two_scenarios_of_one_name_are_refused():
    with pytest.raises(AgentabError, match="two scenarios are named `demo`"):
        workflow(DEMO, DEMO)


def test_the_judge_settings_are_operational_and_taken_from_the_config():
    flow = workflow(DEMO, judge_base_url="http://127.0.0.1:9", credentials="c.toml")
    assert flow.judge_settings() == {
        "judge_base_url": "http://127.0.0.1:9",
        "credentials": "c.toml",
    }
    assert flow.credentials_argument().startswith("--credentials /")


SIGNATURES_SNAKEFILE = """
from agentab.workflow.targets import state_signatures_once
from snakemake.common import get_function_params

def number(wildcards):
    return int(wildcards.n)

rule all:
    input: expand("out/{n}.txt", n=[1, 2])

rule make:
    input: ancient(lambda w: "in.txt")
    output: "out/{n}.txt"
    resources: runtime=lambda w, attempt: 5 * attempt
    params: n=number, text=lambda w, input: "from " + input[0]
    shell: "echo {params.n} {params.text} > {output}"

told = state_signatures_once(workflow.rules)
functions = [rules.make.rule.input[0]._file.callable, *rules.make.rule.params]  # ancient(f)
print("told", told, "kept", all(get_function_params(f) is f._overwrite_params for f in functions))
"""


def test_snakemake_is_told_each_rule_functions_parameters_once_and_jobs_are_unchanged(tmp_path):
    (tmp_path / "Snakefile").write_text(SIGNATURES_SNAKEFILE)
    (tmp_path / "in.txt").write_text("")
    command = [sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # The input function, both params, the resource (and Snakemake's default resources' own
    # functions): each told once, and this Snakemake reads what it was told.
    told, kept = done.stdout.split("told ", 1)[1].split()[0:3:2]
    assert int(told) >= 4 and kept == "True"
    assert "echo 1 from in.txt > out/1.txt" in done.stdout
    assert "echo 2 from in.txt > out/2.txt" in done.stdout


def test_a_sequential_scenarios_wave_asks_for_its_own_runs_of_the_cells_given(tmp_path):
    import shutil

    folder = tmp_path / "demo"
    shutil.copytree(DEMO.parent, folder, symlinks=True)
    path = folder / "scenario.toml"
    path.write_text(
        path.read_text().replace(
            "repetitions = 10\n", 'repetitions = 30\nstopping = "sequential"\nwave = 5\n', 1
        )
    )
    flow = workflow(path)
    assert flow.is_sequential("demo") and flow.wave_count("demo") == 6
    second = flow.wave_measures("demo", 2, ["rule · off"])
    assert second == [
        f"results/demo/runs/rule-off/r{rep:02d}/measures.json" for rep in range(6, 11)
    ]
    assert flow.wave_decision("demo", 2) == "results/demo/waves/wave-2.json"
    assert not workflow(DEMO).is_sequential("demo")
