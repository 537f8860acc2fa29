#!/usr/bin/env python3
"""The positive control of tests/e2e/test_forged_reports.py: the demo's script validator as it
was before `mode = "tests"`, which judged by a report the test process wrote. Each forgery that
fools it is live; `mode = "tests"` must not be fooled. Returns `naive_pass` (an extra).

Its own words, then:

The exit status alone is not evidence: code the agent wrote runs in the test process, and a
`calc.py` that registers `atexit(os._exit, 0)`, or a new `test_x.py` that calls `os._exit(0)`
on import, made a failing suite exit 0. So a small runner writes the result of the run to a
report file the moment the tests have run, before the interpreter can be made to exit, and the
verdict is read from that report: no report, or a report with no test run, is a failure.
(The protected test files are given back as tagged before this runs: `[validation] protect`.)
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

RUNNER = """
import json, sys, unittest
loader = unittest.TestLoader()
suite = loader.discover(".")
result = unittest.TextTestRunner(stream=sys.stderr, verbosity=1).run(suite)
with open(sys.argv[1], "w") as report:
    json.dump({"ran": result.testsRun, "failures": len(result.failures),
               "errors": len(result.errors) + len(loader.errors),
               "skipped": len(result.skipped),
               "unexpected_successes": len(result.unexpectedSuccesses)}, report)
"""


def verdict(report: dict | None, exit_status: int) -> tuple[bool, str]:
    if report is None:
        return (
            False,
            f"no test report: the test process ended before writing it (exit {exit_status})",
        )
    ran, failed = report["ran"], report["failures"] + report["errors"]
    if ran == report["skipped"]:
        return False, f"no test ran ({ran} collected, {report['skipped']} skipped)"
    if failed or report["unexpected_successes"]:
        return False, f"{ran} tests ran: {report['failures']} failed, {report['errors']} errors"
    return True, f"{ran} tests ran, all passed ({report['skipped']} skipped)"


context = json.loads(Path(sys.argv[1]).read_text())
with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "report.json"
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(path)],
        cwd=context["workdir"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        report = None
passed, reason = verdict(report, done.returncode)
print(json.dumps({"metrics": {"naive_pass": passed}, "reasons": {"naive_pass": reason}}))
