"""Offline policies, rubrics, schemas and a validator's own files are frozen with the results,
like the bricks (`run/frozen_inputs.py`): each run.json and each validator's output names the
hashes it used, and editing one reruns exactly the runs (or the validator's jobs) that used it,
through the workflow's params: `snakemake -n` gives the reason, and a second real run does
that and nothing else. Before, editing a policy reran nothing and the next runs silently came
from the new text under the old name."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.e2e.workflow import REPO, job_counts, make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Two cells: the shipped demo policy, and the same policy as a file of the scenario's own.
SCENARIO = """
[scenario]
name = "demo"
question = "Does the policy file drive its cell alone?"

[task]
prompt_file = "task.md"

[etalon]
repo = "calc.bundle"
tag = "v1.0"

[agent]
harness = "pi"
version = "1.6.0"
provider = "offline"
model = "demo"
thinking = "off"
timeout = "2m"

[protocol]
repetitions = 1
limits = { memory = "2G", processes = 256, disk = "1G", patch = "1M" }

[axes]
policy = ["shipped", "file"]

[deltas.policy.file]
model = "policies/fix.toml"

[validation]
metrics = ["tests_pass", "on_task", "scope_clean"]
protect = ["test_*.py"]

[validators.tests]
mode = "tests"
runner = "unittest"
tests = ["test_calc.py"]

[validators.behaviour]
mode = "script"
run = ["validators/behaviour.py"]

[validators.scope]
mode = "script"
run = ["validators/scope.py", "calc.py"]

[validators.on_task]
mode = "judge"
model = "offline:demo"
rubric_file = "rubrics/on_task.md"
schema_file = "rubrics/on_task.schema.json"
"""
SHIPPED, FILE = "shipped/r01", "file/r01"


def project_with_a_policy_file(tmp_path: Path, harnesses: Path) -> Path:
    project = make_project(tmp_path / "project", harnesses, repetitions=1)
    (project / "demo" / "scenario.toml").write_text(SCENARIO)
    (project / "demo" / "policies").mkdir()
    shipped = REPO / "src" / "agentab" / "offline_model" / "policies" / "demo.toml"
    shutil.copy(shipped, project / "demo" / "policies" / "fix.toml")
    return project


def planned(project: Path) -> tuple[dict[str, int], list[tuple[str, str, str]]]:
    """What `snakemake -n` would run: jobs per rule, and (rule, wildcards, reason) per job."""
    result = snakemake(project, "-n")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    output = result.stdout + result.stderr
    jobs = []
    for block in re.split(r"(?m)^\s*rule ", output)[1:]:
        rule = block.split(":", 1)[0]
        said = dict(re.findall(r"(?m)^\s*(wildcards|reason): (.*)$", block))
        if "wildcards" in said:
            jobs.append((rule, said["wildcards"], said.get("reason", "")))
    return job_counts(output), jobs


def run_json(project: Path, run: str) -> dict:
    return json.loads((project / "results" / "demo" / "runs" / run / "run.json").read_text())


def output_of(project: Path, run: str, validator: str) -> dict:
    path = project / "results" / "demo" / "runs" / run / "validators" / f"{validator}.json"
    return json.loads(path.read_text())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_editing_a_policy_or_a_rubric_reruns_exactly_what_used_it(tmp_path, pi_installation):
    project = project_with_a_policy_file(tmp_path, pi_installation.root.parents[1])
    first = snakemake(project)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    results = project / "results" / "demo"
    policy = project / "demo" / "policies" / "fix.toml"
    # Each run names the policy it was served, by its hash; the file's is frozen with the results.
    assert run_json(project, FILE)["inputs"] == [
        {"kind": "policy", "rel": "policies/fix.toml", "sha256": sha256(policy)}
    ]
    shipped = run_json(project, SHIPPED)["inputs"]
    assert [(i["kind"], i["rel"], i["shipped"]) for i in shipped] == [("policy", "demo", True)]
    frozen = results / "inputs" / sha256(policy)[:16] / "fix.toml"
    assert frozen.read_bytes() == policy.read_bytes()
    rubric = project / "demo" / "rubrics" / "on_task.md"
    judged = {i["rel"]: i["sha256"] for i in output_of(project, SHIPPED, "on_task")["inputs"]}
    assert judged["rubrics/on_task.md"] == sha256(rubric)
    before = {run: run_json(project, run) for run in (SHIPPED, FILE)}

    # The policy file: its cell's run, and what follows it; never the other cell's.
    policy.write_text(policy.read_text().replace("len(values) + 1", "len(values) * 1"))
    counts, jobs = planned(project)
    assert counts == {"run_agent": 1, "validate_run": 4, "measure_run": 1, "synthesize": 1,
                      "report": 1}  # fmt: skip
    (agent,) = [job for job in jobs if job[0] == "run_agent"]
    assert "cell=file" in agent[1] and agent[2].startswith("Params have changed")
    second = snakemake(project)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert job_counts(second.stdout + second.stderr) == counts
    assert run_json(project, SHIPPED) == before[SHIPPED]  # not rerun
    assert run_json(project, FILE)["inputs"][0]["sha256"] == sha256(policy)
    assert (results / "inputs" / sha256(policy)[:16] / "fix.toml").read_bytes() == (
        policy.read_bytes()
    )
    assert frozen.exists()  # the old copy stays: the results keep what every run used

    # A rubric: that judge's jobs, on every run; never an agent run or another validator.
    rubric.write_text(rubric.read_text() + "\nA change outside calc.py is off task.\n")
    counts, jobs = planned(project)
    assert counts == {"validate_run": 2, "measure_run": 2, "synthesize": 1, "report": 1}
    assert {job[1].split("validator=")[1] for job in jobs if job[0] == "validate_run"} == {
        "on_task"
    }
    assert all(job[2].startswith("Params have changed") for job in jobs if job[0] == "validate_run")
    third = snakemake(project)
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    for run in (SHIPPED, FILE):
        judged = {i["rel"]: i["sha256"] for i in output_of(project, run, "on_task")["inputs"]}
        assert judged["rubrics/on_task.md"] == sha256(rubric)

    # A file of a validator's own folder (a helper): every script validator that sees that
    # folder, never the tests validator (agentab runs the tests; it reads no validator file);
    # editing one validator's script reruns that validator alone.
    helper = project / "demo" / "validators" / "helper.txt"
    helper.write_text("used by the validators of this folder\n")
    counts, jobs = planned(project)
    assert counts == {"validate_run": 4, "measure_run": 2, "synthesize": 1, "report": 1}
    assert {job[1].split("validator=")[1] for job in jobs if job[0] == "validate_run"} == {
        "behaviour",
        "scope",
    }
    assert snakemake(project).returncode == 0
    folder = output_of(project, FILE, "behaviour")["inputs"]
    assert [(i["kind"], i["rel"]) for i in folder] == [("validator", "validators")]
    assert all(
        i["kind"] != "validator" for i in output_of(project, FILE, "tests").get("inputs", [])
    )
    script = project / "demo" / "validators" / "behaviour.py"
    script.write_text(script.read_text() + "\n# clearer wording\n")
    counts, jobs = planned(project)
    assert {job[1].split("validator=")[1] for job in jobs if job[0] == "validate_run"} == {
        "behaviour"
    }
    assert counts["validate_run"] == 2 and "run_agent" not in counts
