"""`mode = "tests"`: agentab's own test validator. It runs the etalon's tests (and tests the
agent never saw) on the run's result, and scores them from a report that the run's code, which
runs inside the test process, cannot pass off as the runner's.

A script validator that judges by the runner's report trusts a file the run's code can write:
five lines appended to the code under test wrote "every test passed" at the path named on the
command line, then ended the interpreter with status 0. Here, before the test process starts,
agentab

- restores every path that belongs to the measurement (`protect`, what the runner reads, the
  target tests, and the hidden tests' paths) and lays the hidden tests in;
- reads, as text, the tests each target file holds: the tests the report must account for;
- appends two sentinel tests to each target file, one that must pass and one that must fail,
  under names drawn for this job;

then runs the runner in the validator's sandbox, under the run's limits, and reads its report
(one line per test, and an `end` line) as data. `tests_report` says what follows.

    [validators.tests]
    mode = "tests"
    runner = "pytest"                # or "unittest"
    tests = ["tests"]                # files or folders of the etalon; a task's test ids do too
    hidden = "validators/hidden"     # optional: a folder laid over the checkout, for this validator alone
    metric = "tests_pass"            # the boolean it returns (the default)
"""

from __future__ import annotations

import json
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentab.confinement.bwrap import NONE
from agentab.confinement.views import HOME
from agentab.etalon import TreeGit
from agentab.etalon.protect import clear_the_way, remove_inside
from agentab.files import write_inside
from agentab.validators import ValidatorJob, invalid_output, validator_output
from agentab.validators.script import run_confined, script_home
from agentab.validators.tests_collect import PYTEST, expect_and_guard, target_files
from agentab.validators.tests_report import Verdict, judge_report, summary

MODE = "tests"
DEFAULT_METRIC = "tests_pass"
RUNNER_SCRIPT = Path(__file__).with_name("tests_runner.py")


def hidden_sources(spec, task) -> list[str]:
    """The folders of the scenario (as it names them) laid over this validator's checkout: its
    own `hidden`, and the run's task's `hidden_tests`."""
    found = [spec.options["hidden"]] if spec.options.get("hidden") else []
    if task is not None and getattr(task, "hidden_tests", ""):
        found.append(task.hidden_tests)
    return found


def hidden_files(folder: Path) -> list[str]:
    """A hidden folder's files, as repository paths (what the folder holds at `a/b.py` is laid
    at the checkout's `a/b.py`)."""
    return sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )


def task_tests(task) -> tuple[list[str], list[str]]:
    if task is None:
        return [], []
    return list(getattr(task, "fail_to_pass", ())), list(getattr(task, "pass_to_pass", ()))


def id_file(test: str, runner: str) -> str:
    """The file a test id names: `tests/t.py::T::test_x` → `tests/t.py`; `tests.t.T.test_x`
    (unittest) → the longest module prefix, said as a path."""
    if runner == PYTEST:
        return test.split("::", 1)[0]
    return test.rsplit(".", 2)[0].replace(".", "/") + ".py"


def targets_of(spec, task) -> list[str]:
    """What the runner is handed: the validator's `tests`, and the files of the task's ids."""
    runner = spec.options["runner"]
    failing, passing = task_tests(task)
    named = [id_file(test, runner) for test in failing + passing]
    return list(dict.fromkeys([*spec.options.get("tests", ()), *named]))


def lay_hidden(workdir: Path, folders: list[Path]) -> list[str]:
    """Write each hidden folder's files into the checkout at their paths; never through a link
    the run left on the way."""
    laid = []
    for folder in folders:
        for rel in hidden_files(folder):
            remove_inside(workdir, rel)  # a folder or a link the run put there
            clear_the_way(workdir, rel)
            write_inside(workdir, rel, (folder / rel).read_bytes())
            laid.append(rel)
    return laid


def runner_folder(job: ValidatorJob, config: dict) -> Path:
    """The runner and its config, in the job's own folder (read-only in its sandbox)."""
    folder = job.workdir.parent / "validator"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RUNNER_SCRIPT, folder / RUNNER_SCRIPT.name)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def report_path(job: ValidatorJob) -> Path:
    home = script_home(job)
    home.mkdir(parents=True, exist_ok=True)
    return home / f".report-{secrets.token_hex(8)}.jsonl"


def started(report: Path) -> bool:
    try:
        with open(report, "rb") as handle:
            return json.loads(handle.readline()).get("event") == "start"
    except (OSError, ValueError, AttributeError):
        return False


@dataclass(frozen=True)
class RanTests:
    """What one confined run of the tests gave: each expected test's outcome, and the ids the
    task names (empty when it names none: then every test of the targets counts)."""

    verdict: Verdict
    tests: list[str]
    failing: list[str]
    passing: list[str]


def run_and_judge(job: ValidatorJob, task: Any = None) -> RanTests | dict:
    """Lay the hidden tests in, count the targets' tests, add the sentinels, run the runner
    confined, and judge its report; or the invalid output of a run that cannot be scored."""
    options, name = job.spec.options, job.name
    runner = options["runner"]
    hidden = [job.scenario_dir / rel for rel in hidden_sources(job.spec, task)]
    laid = lay_hidden(job.workdir, hidden)
    tagged = set(TreeGit(job.workdir).etalon_files()) | set(laid)
    files = target_files(targets_of(job.spec, task), tagged, runner)
    if not files:
        return invalid_output(name, MODE, f"no test file among {targets_of(job.spec, task)}")
    expected = expect_and_guard(job.workdir, files, runner)
    if expected.unreadable:
        path, why = next(iter(expected.unreadable.items()))
        return invalid_output(name, MODE, f"cannot read the tests of {path}: {why}")
    report = report_path(job)
    # The runner names the report as its sandbox shows it: its HOME is the job's home.
    seen = report if job.confinement == NONE else Path(HOME) / report.name
    folder = runner_folder(job, {"runner": runner, "targets": files, "report": str(seen)})
    python = str(options.get("python", "python3"))
    argv = [python, str(folder / RUNNER_SCRIPT.name), str(folder / "config.json")]
    ran = run_confined(job, argv, folder, MODE)
    if isinstance(ran, dict):
        return ran
    if not started(report) and not ran.result.timed_out:
        # Nothing of the run's code had run yet (the runner starts before it imports any).
        return invalid_output(name, MODE, f"the test runner did not start: exit {ran.exit_text()}")
    timed_out = f"timed out after {ran.timeout:g}s" if ran.result.timed_out else ""
    failing, passing = task_tests(task)
    tests = failing + passing or expected.all_tests()
    verdict = judge_report(report, expected, tests, ran.result.exit_code, timed_out)
    return RanTests(verdict, tests, failing, passing)


def run_tests(job: ValidatorJob, task: Any = None) -> dict:
    """The validator's output: its metric, and with a task that names its tests, fail_to_pass
    and pass_to_pass."""
    ran = run_and_judge(job, task)
    if isinstance(ran, dict):
        return ran
    metric = str(job.spec.options.get("metric", DEFAULT_METRIC))
    explicit = bool(ran.failing or ran.passing)
    if ran.verdict.forged:
        # The code under test is the agent's work: a report it spoiled is its failure, never a
        # run taken out of the denominator (docs/validators.md).
        names = [metric, *(["fail_to_pass", "pass_to_pass"] if explicit else [])]
        return validator_output(
            job.name, MODE, dict.fromkeys(names, False), dict.fromkeys(names, ran.verdict.forged)
        )
    metrics, reasons = {}, {}
    metrics[metric], reasons[metric] = summary(ran.verdict, ran.tests, skip_passes=not explicit)
    if explicit:
        metrics["fail_to_pass"], reasons["fail_to_pass"] = summary(ran.verdict, ran.failing)
        metrics["pass_to_pass"], reasons["pass_to_pass"] = (
            summary(ran.verdict, ran.passing)
            if ran.passing
            else (True, "no other test to keep passing")
        )
    return validator_output(job.name, MODE, metrics, reasons)
