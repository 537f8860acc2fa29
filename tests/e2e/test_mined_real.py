"""The shipped example of mining a real project (scenarios/mined-more-itertools/README.md), its
recipe run as written: more-itertools 8.0.2 from its sdist, six real upstream commits after
it, `agentab tasks mine` with the more-itertools scenario's environment; then the mined tasks
end to end with the real pi and snakemake, the fixing policy against the one that fixes
nothing, pooled over the three tasks."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.real_repository import NO_GIT_CONFIG, REPO, bundle_from_sdist
from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

README = REPO / "scenarios" / "mined-more-itertools" / "README.md"
SCENARIO = REPO / "scenarios" / "more-itertools" / "scenario.toml"
TASKS = {
    "add-nth-or-last": "tests/test_more.py::NthOrLastTests::test_basic",
    "add-sample": "tests/test_more.py::SampleTests::test_length",
    "make-pred-none-work-in": "tests/test_recipes.py::PartitionTests::test_pred_is_none",
}


def readme_line(starting: str) -> str:
    (line,) = [
        line for line in README.read_text().splitlines() if line.strip().startswith(starting)
    ]
    return line


@pytest.fixture(scope="module")
def mined(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mined-real")
    tree = bundle_from_sdist(root / "mi").parent
    apply = readme_line("git -C /tmp/mi/").replace("/tmp/mi/more-itertools-8.0.2", str(tree))
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **NO_GIT_CONFIG}
    done = subprocess.run(["bash", "-c", apply], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = root / "mined" / "mined-more-itertools"
    result = subprocess.run(
        [sys.executable, "-m", "agentab.cli", "tasks", "mine", str(tree), "--since", "v8.0.2",
         "--scenario", str(SCENARIO), "--out", str(out)],
        capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_the_three_real_commits_that_change_code_and_tests_become_tasks(mined):
    record = json.loads((mined / "mined.json").read_text())
    assert record["funnel"] == {
        "candidates": 3, "builds": 3, "fail-to-pass": 3, "stable": 3, "kept": 3,
    }  # fmt: skip
    not_candidates = [entry["reason"] for entry in record["commits"] if not entry["candidate"]]
    assert not_candidates == [
        "changes no test",
        "changes no test",
        "changes neither code nor tests",
    ]
    scenario = (mined / "scenario.toml").read_text()
    for stem, failing in TASKS.items():
        (block,) = re.findall(rf"(?ms)^\[tasks\.{stem}-[0-9a-f]{{7}}\]\n.*?(?=^#|\Z)", scenario)
        before, after = block.split("pass_to_pass")
        assert f'"{failing}",' in before  # fail-to-pass
        assert len(after.splitlines()) > 350  # the project's suite, passing both times
    partition = re.search(r"(?ms)^\[tasks\.make-pred-none-work-in-.*?(?=^#|\Z)", scenario)[0]
    assert partition.split("pass_to_pass")[0].count("::PartitionTests::") == 1


def read_csv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_mined_real_tasks_run_end_to_end(mined, tmp_path, pi_installation):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    subprocess.run(["cp", "-a", str(mined), str(project / "mined")], check=True)
    config = project / "config" / "config.yaml"
    config.write_text(config.read_text().replace("demo/scenario.toml", "mined/scenario.toml"))
    result = snakemake(project, timeout=2400)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = project / "results" / "mined-more-itertools"
    measures = [json.loads(p.read_text()) for p in (results / "runs").glob("*/r*/measures.json")]
    assert len(measures) == 2 * 3 * 4
    resolved = {}
    for found in measures:
        assert found["status"] == "valid", found
        resolved.setdefault(found["cell"], set()).add(found["metrics"]["resolved"])
    assert resolved == {"nofix": {False}, "fix": {True}}
    gaps = read_csv(results / "gaps.csv")
    pooled = next(
        row
        for row in gaps
        if (row["metric"], row["cell"], row["task"]) == ("resolved", "fix", "all")
    )
    assert pooled["verdict"] == "established", pooled
