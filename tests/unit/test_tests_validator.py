"""`mode = "tests"`: the tests a target file holds, read as text; the sentinels appended to it;
and the verdict on a report, forged or not. The runner itself runs in tests/e2e."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentab.validators.tests_collect import (
    PYTEST,
    UNITTEST,
    Expected,
    Sentinels,
    collected_tests,
    expect_and_guard,
    target_files,
)
from agentab.validators.tests_report import FORGED, judge_report, summary

RUNNER = Path(__file__).resolve().parents[2] / "src" / "agentab" / "validators" / "tests_runner.py"
SOURCE = """
import unittest


class Base(unittest.TestCase):
    def test_base(self):
        pass


class CalcTest(Base):
    def test_add(self):
        pass

    def helper(self):
        pass


class TestPlain:
    def test_plain(self):
        pass


class TestWithInit:
    def __init__(self):
        pass

    def test_never(self):
        pass


def test_function():
    pass
"""


def test_the_tests_of_a_file_are_read_as_each_runner_collects_them():
    assert collected_tests(SOURCE, "t/test_x.py", UNITTEST) == [
        "t.test_x.Base.test_base",
        "t.test_x.CalcTest.test_base",
        "t.test_x.CalcTest.test_add",
    ]
    assert collected_tests(SOURCE, "t/test_x.py", PYTEST) == [
        "t/test_x.py::Base::test_base",
        "t/test_x.py::CalcTest::test_base",
        "t/test_x.py::CalcTest::test_add",
        "t/test_x.py::TestPlain::test_plain",
        "t/test_x.py::test_function",
    ]


def test_targets_are_the_tags_files_never_one_the_run_added():
    tagged = {"tests/test_a.py", "tests/helper.py", "tests/sub/b_test.py", "calc.py"}
    assert target_files(["tests"], tagged, PYTEST) == ["tests/sub/b_test.py", "tests/test_a.py"]
    assert target_files(["tests/test_new.py"], tagged, PYTEST) == []  # added by the run
    assert target_files(["calc.py"], tagged, UNITTEST) == ["calc.py"]  # named: taken as named


def report(path: Path, *events: dict) -> Path:
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    return path


EXPECTED = Expected(
    tests={"test_c.py": ["test_c.T.test_a", "test_c.T.test_b"]},
    sentinels={"test_c.py": Sentinels("test_c.S.test_p", "test_c.S.test_f")},
)
TESTS = EXPECTED.all_tests()
START, END = {"event": "start"}, {"event": "end"}


def event(id_: str, outcome: str) -> dict:
    return {"event": "test", "id": id_, "outcome": outcome}


def test_an_honest_report_is_graded(tmp_path):
    path = report(
        tmp_path / "r",
        START,
        event("test_c.T.test_a", "passed"),
        event("test_c.T.test_b", "failed"),
        event("test_c.S.test_p", "passed"),
        event("test_c.S.test_f", "failed"),
        END,
    )
    verdict = judge_report(path, EXPECTED, TESTS, exit_code=1)
    assert verdict.forged is None
    assert summary(verdict, TESTS) == (False, "1 of 2 passed: test_c.T.test_b failed")
    assert summary(verdict, ["test_c.T.test_a"]) == (True, "1 of 1 passed")


def test_a_report_that_claims_everything_passed_is_forged_and_without_sentinels_it_would_pass(
    tmp_path,
):
    # What a forger that knows the runner writes (tests/e2e/test_forged_reports.py): every test
    # it finds in the file, the sentinels too, passed; an end line; status 0.
    lines = [event(t, "passed") for t in [*TESTS, "test_c.S.test_p", "test_c.S.test_f"]]
    path = report(tmp_path / "r", START, *lines, END)
    verdict = judge_report(path, EXPECTED, TESTS, exit_code=0)
    assert verdict.forged.startswith(f"{FORGED}: a test agentab added to test_c.py, which fails")
    # The control: the same report, judged without the sentinels, is a pass.
    blind = Expected(tests=EXPECTED.tests)
    assert summary(judge_report(path, blind, TESTS, exit_code=0), TESTS)[0] is True


@pytest.mark.parametrize(
    "events, exit_code, why",
    [
        ([START, event("test_c.T.test_a", "passed")], 0, "ended with status 0 before the runner"),
        ([START, event("test_c.T.test_a", "failed"), event("test_c.T.test_a", "passed"), END], 1,
         "reported twice"),
        ([START, {"garbage": 1}, END], 0, "not the runner's"),
    ],
)  # fmt: skip
def test_each_sign_of_a_forgery(tmp_path, events, exit_code, why):
    verdict = judge_report(report(tmp_path / "r", *events), EXPECTED, TESTS, exit_code)
    assert verdict.forged and why in verdict.forged, verdict


def test_a_crash_is_a_failure_not_a_forgery(tmp_path):
    path = report(tmp_path / "r", START, event("test_c.T.test_a", "passed"))
    verdict = judge_report(path, EXPECTED, TESTS, exit_code=-11)
    assert verdict.forged is None and not verdict.finished
    passed, why = summary(verdict, TESTS)
    assert not passed and "before the runner finished" in why


def test_a_file_that_does_not_import_fails_its_tests_without_a_forgery(tmp_path):
    path = report(tmp_path / "r", START, {"event": "collect_error", "path": "test_c.py"}, END)
    verdict = judge_report(path, EXPECTED, TESTS, exit_code=1)
    assert verdict.forged is None
    assert summary(verdict, TESTS)[0] is False


def test_parametrized_cases_count_for_their_test(tmp_path):
    expected = Expected(tests={"t.py": ["t.py::test_x"]})
    path = report(tmp_path / "r", START, event("t.py::test_x[1]", "passed"),
                  event("t.py::test_x[2]", "failed"), END)  # fmt: skip
    assert judge_report(path, expected, ["t.py::test_x"], 1).outcomes == {"t.py::test_x": "failed"}


@pytest.mark.parametrize("runner", [UNITTEST, PYTEST])
def test_the_runner_reports_the_sentinels_as_they_are(tmp_path, runner):
    """The runner, run by this interpreter: the sentinels appended to a real file come out one
    passed and one failed, its own tests as they are, and an end line."""
    (tmp_path / "test_c.py").write_text(
        "import unittest\n\n\nclass T(unittest.TestCase):\n"
        "    def test_a(self):\n        pass\n\n    def test_b(self):\n        assert False\n"
    )
    expected = expect_and_guard(tmp_path, ["test_c.py"], runner)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"runner": runner, "targets": ["test_c.py"], "report": "r"}))
    done = subprocess.run([sys.executable, str(RUNNER), str(config)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    tests = expected.all_tests()
    verdict = judge_report(tmp_path / "r", expected, tests, done.returncode)
    assert verdict.forged is None, (verdict, done.stderr)
    assert summary(verdict, tests) == (False, f"1 of 2 passed: {tests[1]} failed")
