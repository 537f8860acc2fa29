"""The test runner of a `mode = "tests"` validator: runs inside its sandbox, with the checkout's
Python, and imports nothing of agentab (it is copied there as a file; the standard library and
the runner measured are all it has).

It runs the tests it is given and writes one JSON line per test to the report file its config
names, the moment each test ends, then an `end` line once the runner has finished. It never
decides anything: agentab reads the report outside the sandbox, as data, and checks it against
what it knows and the test process does not (the tests it collected without importing the
run's code, and its sentinels: docs/validators.md "A report the code under test cannot write").

    python3 tests_runner.py CONFIG.json
    CONFIG = {"runner": "pytest" | "unittest", "targets": [...], "report": PATH}
"""

import json
import os
import sys
import time


class Report:
    """Appends one JSON line per event, flushed to disk before the next test starts."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def write(self, **event):
        line = json.dumps(event, ensure_ascii=True) + "\n"
        os.write(self.fd, line.encode("ascii"))


def worst(outcomes):
    """One outcome of a test from its phases: an error in setup or teardown is an error."""
    for outcome in ("failed", "error", "skipped"):
        if outcome in outcomes:
            return outcome
    return "passed"


class PytestRecorder:
    """A pytest plugin: each test's outcome once its last phase has run. (pluggy passes hook
    arguments by name: `report` is pytest's name for them.)"""

    def __init__(self, out):
        self.out = out
        self.phases = {}

    def pytest_runtest_logreport(self, report):
        phase = report.outcome
        if report.failed and report.when != "call":
            phase = "error"
        if hasattr(report, "wasxfail"):
            phase = "skipped" if report.skipped else "failed"  # an unexpected pass is no pass
        self.phases.setdefault(report.nodeid, []).append(phase)
        if report.when == "teardown":
            self.out.write(
                event="test", id=report.nodeid, outcome=worst(self.phases[report.nodeid])
            )

    def pytest_collectreport(self, report):
        if report.failed:
            self.out.write(
                event="collect_error", path=report.nodeid, message=str(report.longrepr)[-2000:]
            )


def run_pytest(targets, out):
    import pytest

    # No cache (a file the next run would read) and no test reordering plugin.
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", *targets]
    return int(pytest.main(args, plugins=[PytestRecorder(out)]))


def run_unittest(targets, out):
    import unittest

    class Recording(unittest.TextTestResult):
        def record(self, test, outcome):
            out.write(event="test", id=test.id(), outcome=outcome)

        def addSuccess(self, test):
            super().addSuccess(test)
            self.record(test, "passed")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self.record(test, "failed")

        def addError(self, test, err):
            super().addError(test, err)
            self.record(test, "error")

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self.record(test, "skipped")

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self.record(test, "skipped")

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self.record(test, "failed")

    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    sys.path.insert(0, os.getcwd())
    for target in targets:
        name = target[:-3].replace("/", ".") if target.endswith(".py") else target
        try:
            suite.addTests(loader.loadTestsFromName(name))
        except Exception as error:  # the module does not import: its tests do not run
            out.write(event="collect_error", path=target, message=repr(error)[-2000:])
    for error in loader.errors:
        out.write(event="collect_error", path="", message=str(error)[-2000:])
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=1, resultclass=Recording)
    result = runner.run(suite)
    return 0 if result.wasSuccessful() else 1


def main():
    with open(sys.argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    run = run_pytest if config["runner"] == "pytest" else run_unittest
    if config["runner"] == "pytest":
        try:
            import pytest  # noqa: F401  (a runner that is missing fails here, before `start`)
        except ImportError:
            sys.stderr.write(
                f"no pytest in {sys.executable}: the scenario's [etalon] setup must install it\n"
            )
            return 3
    report = Report(config["report"])
    report.write(event="start", runner=config["runner"], python=sys.version.split()[0])
    started = time.monotonic()
    status = run(config["targets"], report)
    report.write(event="end", status=status, seconds=round(time.monotonic() - started, 3))
    return status


if __name__ == "__main__":
    sys.exit(main())
