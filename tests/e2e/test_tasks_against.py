"""A task that got worse, end to end: three tasks, two cells, an offline policy under which the
rule makes the agent run the tests on two tasks and stop running them on the third. The pooled
gap is positive; the synthesis names the third task in one line, and the rule's cell page marks
it, in a real browser."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from agentab.synthesis.families import BEHAVIOUR_METRICS
from tests.e2e.browser import Chromium
from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

POLICY = """\
[policy]
description = "Runs the tests when the rule asks, except on the task that names double(x), where it runs them only without the rule."

[[steps]]
id = "read"
action = "read"
path = "calc.py"

[[steps]]
id = "fix"
action = "edit"
path = "calc.py"
old = "len(values) - 1"
new = "len(values)"

[[steps]]
id = "run-tests"
action = "run"
command = "python3 -m unittest"
chance = 0.0

[[steps.when]]
system_contains = "always run the test suite"
prompt_contains = "double(x)"
chance = 0.0

[[steps.when]]
system_contains = "always run the test suite"
chance = 1.0

[[steps.when]]
prompt_contains = "double(x)"
chance = 1.0

[final]
text = "Done."
"""

TASKS = {
    "mean": "task.md",
    "double": "double.md",
    "half": "half.md",
}


def three_task_project(root: Path, harnesses: Path) -> Path:
    project = make_project(root, harnesses, repetitions=1)
    demo = project / "demo"
    (demo / "double.md").write_text("Add `double(x)` to calc.py, returning twice x.\n")
    (demo / "half.md").write_text("Add `half(x)` to calc.py, returning x / 2.\n")
    (demo / "policy.toml").write_text(POLICY, encoding="utf-8")
    scenario = demo / "scenario.toml"
    text = scenario.read_text(encoding="utf-8")
    tasks = "\n\n".join(f'[tasks.{name}]\nprompt_file = "{file}"' for name, file in TASKS.items())
    text = text.replace('[task]\nprompt_file = "task.md"', tasks)
    text = text.replace('model = "demo"', 'model = "policy.toml"', 1)
    text = re.sub(r'(?m)^thinking = \["off", "high"\]\n', "", text)
    text = text.replace('[deltas.thinking.high]\nthinking = "high"\n', "")
    scenario.write_text(text, encoding="utf-8")
    return project


def test_a_task_against_the_pooled_gap_is_named_and_marked(tmp_path, pi_installation) -> None:
    project = three_task_project(tmp_path / "project", pi_installation.root.parents[1])
    result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    results = project / "results" / "demo"
    with (results / "gaps.csv").open(encoding="utf-8", newline="") as handle:
        gaps = [row for row in csv.DictReader(handle) if row["cell"] == "rule"]
    ran = {row["task"]: float(row["gap"]) for row in gaps if row["metric"] == "ran_tests"}
    # The rule: tests run on mean and half (+100 pp each), not on double (−100 pp).
    assert ran == pytest.approx({"all": 1 / 3, "mean": 1.0, "half": 1.0, "double": -1.0})
    pooled = {row["metric"]: float(row["gap"]) for row in gaps if row["task"] == "all"}
    # The outcomes' gaps (the behaviour measures' rows are a family of their own).
    against = [
        (row["task"], row["metric"])
        for row in gaps
        if row["task"] != "all"
        and row["metric"] not in BEHAVIOUR_METRICS
        and float(row["gap"]) * pooled[row["metric"]] < 0
    ]
    assert ("double", "ran_tests") in against
    synthesis = (results / "synthesis.md").read_text(encoding="utf-8")
    [line] = [line for line in synthesis.splitlines() if "against the pooled gap**" in line]
    count = len(against)
    assert line.startswith(f"**{count} task gap{'s' * (count != 1)} point")
    assert "`double` on `ran_tests`: -100 pp (pooled +33.3 pp)" in line
    for task, metric in against:
        assert f"`{task}` on `{metric}`" in line

    with Chromium() as browser:
        overview = browser.visit((results / "report" / "index.html").as_uri())
        cell = browser.visit(browser.link_target(overview.url, "rule"))
    assert cell.errors == [] and cell.broken_images == [], (cell.errors, cell.broken_images)
    table = cell.text.split("Gaps per task, sorted against the pooled gap", 1)[1]
    table = table.split("\nRuns\n", 1)[0]
    rows = [line.split("\t") for line in table.splitlines() if line.count("\t") >= 5]
    # metric, task, gap, interval, pooled gap, mark: the ran_tests rows the pooled gap's way
    # first (ties in the tasks' order), the task against it last, marked.
    assert [(row[1], row[-1].strip()) for row in rows if row[0] == "ran_tests"] == [
        ("mean", ""),
        ("half", ""),
        ("double", "▼ against"),
    ]
    marked = [(row[1], row[0]) for row in rows if row[-1].strip() == "▼ against"]
    assert sorted(marked) == sorted(against)
