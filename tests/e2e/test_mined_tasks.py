"""`agentab tasks mine` on a history with known good and bad candidates (tests/mined_history.py),
the real command in its sandbox; then the mined tasks run end to end with the real pi and
snakemake: the policy that applies each commit's fix against the one that changes nothing."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentab.etalon import fresh_clone
from agentab.etalon.repository import git
from tests.e2e.workflow import make_project, snakemake
from tests.mined_history import DROPPED, KEPT, NOT_CANDIDATES, SETUP, build_history

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ISSUE = "parse() fails on a number written with the minus sign U+2212 (\u22125).\n"


def agentab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentab.cli", *args], cwd=cwd, capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def mined(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mining")
    repo = build_history(root / "shop")
    (root / "issues.json").write_text(json.dumps({"12": ISSUE}))
    result = agentab(
        "tasks", "mine", str(repo), "--since", "base", "--runner", "unittest",
        "--setup", SETUP, "--issues", "issues.json", "--out", "mined", cwd=root,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (root / "mined" / "printed.txt").write_text(result.stdout + result.stderr)
    return root / "mined"


def record(mined: Path) -> dict:
    return json.loads((mined / "mined.json").read_text())


def test_it_keeps_exactly_the_good_candidates_and_says_why_of_every_other(mined):
    found = record(mined)
    by_subject = {entry["subject"]: entry for entry in found["commits"]}
    kept = [entry["task"] for entry in found["commits"] if "task" in entry]
    assert [name.rsplit("-", 1)[0] for name in kept] == list(KEPT)
    for subject, (stage, reason) in DROPPED.items():
        entry = by_subject[subject]
        assert entry["dropped_at"] == stage and entry["reason"].startswith(reason), entry
    for subject, reason in NOT_CANDIDATES.items():
        assert by_subject[subject] == {**by_subject[subject], "candidate": False, "reason": reason}
    assert found["funnel"] == {
        "candidates": 7, "builds": 6, "fail-to-pass": 3, "stable": 2, "kept": 2,
    }  # fmt: skip
    printed = (mined / "printed.txt").read_text()
    assert "candidates 7 → builds 6 → fail-to-pass 3 → stable 2 → kept 2" in printed


def test_a_kept_task_names_its_failing_and_its_passing_tests(mined):
    scenario = (mined / "scenario.toml").read_text()
    discount = next(name for name in record_tasks(mined) if name.startswith(KEPT[0]))
    assert f"[tasks.{discount}]" in scenario
    assert (mined / "tasks.toml").read_text() in scenario  # the blocks to paste, as they run
    block = scenario.split(f"[tasks.{discount}]")[1].split("[tasks.")[0]
    assert '"tests.test_shop.TestShop.test_discount",' in block.split("pass_to_pass")[0]
    assert '"tests.test_shop.TestShop.test_total",' in block.split("pass_to_pass")[1]
    hidden = mined / "hidden" / discount / "tests" / "test_shop.py"
    assert "def test_discount" in hidden.read_text()
    # The linked issue's text, from the file given, is the second task's prompt.
    parse = next(name for name in record_tasks(mined) if name.startswith(KEPT[1]))
    assert (mined / "prompts" / f"{parse}.md").read_text() == ISSUE
    check = agentab("check", "scenario.toml", cwd=mined)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "tasks (2): every cell runs each" in check.stdout
    # Dropped candidates leave nothing behind but their entry in mined.json.
    assert sorted(path.name for path in (mined / "hidden").iterdir()) == sorted(record_tasks(mined))


def record_tasks(mined: Path) -> list[str]:
    return [entry["task"] for entry in record(mined)["commits"] if "task" in entry]


def test_neither_the_fix_nor_its_tests_reach_a_clone_of_a_mined_task(mined, tmp_path):
    found = {entry["subject"]: entry for entry in record(mined)["commits"]}
    fix = found["Fix total ignoring the discount"]
    bundle = str(mined / "mined.bundle")
    heads = git("bundle", "list-heads", bundle)
    assert sorted(line.split()[1] for line in heads.splitlines()) == sorted(
        f"refs/tags/mined/{name}" for name in record_tasks(mined)
    )  # the user's branches and tags stay out
    task = next(name for name in record_tasks(mined) if name.startswith(KEPT[0]))
    clone = tmp_path / "clone"
    fresh_clone(bundle, f"mined/{task}", clone, tmp_path / "mirrors")
    objects = git("cat-file", "--batch-all-objects", "--batch-check", cwd=clone)
    assert fix["sha"] not in objects
    assert "test_discount" not in (clone / "tests" / "test_shop.py").read_text()
    assert git("log", "--all", "--format=%s", cwd=clone).split("\n")[0] == "Start the shop"
    prompt = (mined / "prompts" / f"{task}.md").read_text()
    assert "test_discount" not in prompt


def read_csv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_mined_tasks_run_end_to_end_and_the_fix_is_established(
    mined, tmp_path, pi_installation
):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    scenario_dir = project / "mined"
    subprocess.run(["cp", "-a", str(mined), str(scenario_dir)], check=True)
    config = project / "config" / "config.yaml"
    config.write_text(config.read_text().replace("demo/scenario.toml", "mined/scenario.toml"))
    result = snakemake(project, timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = project / "results" / "mined"
    runs = list((results / "runs").glob("*/r*/measures.json"))
    measures = [json.loads(path.read_text()) for path in runs]
    assert len(measures) == 2 * 2 * 5 and all(m["status"] == "valid" for m in measures)
    by_cell = {}
    for found in measures:
        by_cell.setdefault(found["cell"], []).append(found["metrics"]["resolved"])
    assert by_cell == {"nofix": [False] * 10, "fix": [True] * 10}
    gaps = read_csv(results / "gaps.csv")
    resolved = next(
        row for row in gaps
        if (row["metric"], row["cell"], row["task"]) == ("resolved", "fix", "all")
    )  # fmt: skip
    assert resolved["verdict"] == "established", resolved
    # Every run of every task resolved against none: pass^5, beside the rate, established too.
    pass_k = next(row for row in gaps if row["metric"] == "resolved pass^5")
    assert (pass_k["cell"], pass_k["value_cell"], pass_k["value_ref"]) == ("fix", "1.0", "0.0")
    assert pass_k["verdict"] == "established" and pass_k["p_holm"] == ""
    assert "### pass^k" in (results / "synthesis.md").read_text(encoding="utf-8")
