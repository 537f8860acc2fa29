#!/usr/bin/env python3
"""The positive control of tests/e2e/test_forged_reports_real.py: more-itertools' script
validator as it was before `mode = "tests"`, judged by pytest's JUnit report, which the run's
code can write. Returns `naive_fixed` and `naive_suite` (extras). Its own words, then:

bug_fixed and suite_passes, scored on the run's own code in its own checkout.

Runs with the Python the etalon's setup made (`[etalon] path` comes first on this validator's
PATH). `bug_fixed` runs a test the agent never saw (hidden/, beside this file), and checks that
the package it imported is the checkout's: a copy installed anywhere else would score that
copy, not the run's code. `suite_passes` runs the project's own suite (its tests, conftest and
configuration given back as tagged first: `[validation] protect`).

Both are judged by pytest's JUnit report, written when the session ends and before the
interpreter exits, never by the exit status alone: the run's code runs in the test process and
can end it with status 0 (`atexit.register(os._exit, 0)`). No report, or a report in which no
test ran, is a failure.
"""

import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

HIDDEN = Path(__file__).resolve().parent / "hidden" / "tests" / "test_partition_none.py"

context = json.loads(Path(sys.argv[1]).read_text())
workdir = Path(context["workdir"])
try:
    import pytest  # noqa: F401  (the environment's, not this script's)
except ImportError:
    sys.exit(f"no pytest in {sys.executable}: the scenario's [etalon] setup must install it")


def pytest_run(*args: str) -> tuple[bool, str]:
    # `python -m` puts the working folder first on sys.path: the checkout's package is imported.
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.xml"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             f"--junitxml={report}", *args],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=150,
        )  # fmt: skip
        return verdict(report, done.returncode)


def verdict(report: Path, exit_status: int) -> tuple[bool, str]:
    try:
        suites = ElementTree.parse(report).getroot()
    except (OSError, ElementTree.ParseError):
        return (
            False,
            f"no test report: the test process ended before writing it (exit {exit_status})",
        )
    counts = {key: 0 for key in ("tests", "failures", "errors", "skipped")}
    for suite in suites.iter("testsuite"):
        for key in counts:
            counts[key] += int(suite.get(key, 0))
    ran = counts["tests"] - counts["skipped"]
    if ran <= 0:
        return False, f"no test ran ({counts['tests']} collected, {counts['skipped']} skipped)"
    if counts["failures"] or counts["errors"]:
        return False, f"{ran} tests ran: {counts['failures']} failed, {counts['errors']} errors"
    return True, f"{ran} passed ({counts['skipped']} skipped)"


fixed, fixed_why = pytest_run(str(HIDDEN))
suite, suite_why = pytest_run("tests")
print(
    json.dumps(
        {
            "metrics": {"naive_fixed": fixed, "naive_suite": suite},
            "reasons": {"naive_fixed": fixed_why, "naive_suite": suite_why},
        }
    )
)
