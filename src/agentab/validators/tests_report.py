"""A `mode = "tests"` validator's verdict: the runner's report, read as data outside the sandbox,
checked against what agentab knew before the test process started (`tests_collect`).

Three answers, and only the last is a grade:
- **report forged** (a fail, with that reason, never a pass, and never an invalid run: the
  code under test is the agent's work, so a report it spoiled is the agent's outcome): a sentinel's outcome is not the one it
  must have, a test is reported twice with two outcomes, or the test process ended with status 0
  before the runner said it had finished (code of the run ended it, claiming success);
- the tests did not finish (a crash, a non-zero end, the time limit): every test not reported
  has failed;
- otherwise each expected test's outcome: it passes when every reported case of it passed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from agentab.validators.tests_collect import Expected, base_id

FORGED = "report forged"
# A report is a line per test: past this it is not read (the run's code wrote it).
MAX_REPORT_BYTES = 32 * 1024 * 1024
SHOWN_TESTS = 5


@dataclass
class Report:
    """What the runner wrote: each test's outcome by reported id, the files that did not
    import, whether it reached its end, and the lines that were not its own."""

    outcomes: dict[str, str] = field(default_factory=dict)
    twice: list[str] = field(default_factory=list)
    collect_errors: list[str] = field(default_factory=list)
    started: bool = False
    ended: bool = False
    garbled: int = 0


def read_report(path: Path) -> Report:
    report = Report()
    try:
        size = path.stat().st_size
    except OSError:
        return report
    if size > MAX_REPORT_BYTES:
        report.garbled += 1
        return report
    for line in path.read_bytes().splitlines():
        try:
            event = json.loads(line)
            kind = event["event"]
        except (ValueError, TypeError, KeyError):
            report.garbled += 1
            continue
        if kind == "start":
            report.started = True
        elif kind == "end":
            report.ended = True
        elif kind == "collect_error":
            report.collect_errors.append(str(event.get("path", "")))
        elif kind == "test" and isinstance(event.get("id"), str):
            test, outcome = event["id"], str(event.get("outcome"))
            if report.outcomes.get(test, outcome) != outcome:
                report.twice.append(test)
            report.outcomes[test] = outcome
        else:
            report.garbled += 1
    return report


@dataclass(frozen=True)
class Verdict:
    """Each expected test's outcome (passed, failed, error, skipped, missing), or a forgery."""

    forged: str | None
    outcomes: dict[str, str]
    finished: bool
    why_unfinished: str = ""

    def passed(self, tests: list[str]) -> list[str]:
        return [test for test in tests if self.outcomes.get(test) == "passed"]

    def not_passing(self, tests: list[str], skip_passes: bool = False) -> list[str]:
        ok = ("passed", "skipped") if skip_passes else ("passed",)
        return [test for test in tests if self.outcomes.get(test, "missing") not in ok]


def forgery(report: Report, expected: Expected, exit_code: int | None) -> str | None:
    """Why the report cannot be the runner's, or None."""
    if report.garbled:
        return f"{FORGED}: {report.garbled} line(s) of the report are not the runner's"
    if report.twice:
        return f"{FORGED}: {shown(report.twice)} reported twice with two outcomes"
    if exit_code == 0 and not report.ended:
        return (
            f"{FORGED}: the test process ended with status 0 before the runner finished "
            f"({len(report.outcomes)} test(s) reported)"
        )
    if not report.ended:
        return None  # it crashed or was stopped: the sentinels may not have run
    errors = set(report.collect_errors)
    for path, sentinel in expected.sentinels.items():
        if any(error.split("::")[0] in (path, "") for error in errors):
            continue  # the file did not import: none of its tests ran, its sentinels neither
        got_pass = report.outcomes.get(sentinel.must_pass, "missing")
        got_fail = report.outcomes.get(sentinel.must_fail, "missing")
        if (got_pass, got_fail) == ("skipped", "skipped"):
            continue  # the whole file was skipped (as tagged): its tests did not pass either
        if got_fail != "failed":
            return f"{FORGED}: a test agentab added to {path}, which fails, was reported {got_fail}"
        if got_pass != "passed":
            return (
                f"{FORGED}: a test agentab added to {path}, which passes, was reported {got_pass}"
            )
    return None


def outcomes_by_test(report: Report, tests: list[str]) -> dict[str, str]:
    """Each expected test's outcome: its worst reported case; `missing` when none was."""
    cases: dict[str, list[str]] = {}
    for reported, outcome in report.outcomes.items():
        cases.setdefault(base_id(reported), []).append(outcome)
        if reported != base_id(reported):
            cases.setdefault(reported, []).append(outcome)
    found = {}
    for test in tests:
        got = cases.get(test) or cases.get(base_id(test)) or []
        found[test] = next(
            (o for o in ("failed", "error", "skipped") if o in got), "passed" if got else "missing"
        )
    return found


def judge_report(
    report_path: Path,
    expected: Expected,
    tests: list[str],
    exit_code: int | None,
    timed_out: str = "",
) -> Verdict:
    report = read_report(report_path)
    forged = forgery(report, expected, None if timed_out else exit_code)
    unfinished = ""
    if timed_out:
        unfinished = timed_out
    elif not report.ended:
        unfinished = f"the test process ended (exit {exit_code}) before the runner finished"
    elif not report.started:
        unfinished = "the runner never started"
    return Verdict(forged, outcomes_by_test(report, tests), not unfinished, unfinished)


def shown(tests: list[str]) -> str:
    more = f" and {len(tests) - SHOWN_TESTS} more" if len(tests) > SHOWN_TESTS else ""
    return ", ".join(tests[:SHOWN_TESTS]) + more


def summary(verdict: Verdict, tests: list[str], skip_passes: bool = False) -> tuple[bool, str]:
    """(whether every one of `tests` passed, a reason a person reads)."""
    if not tests:
        return False, "no test to run"
    bad = verdict.not_passing(tests, skip_passes)
    passed = len(verdict.passed(tests))
    ok = not bad and verdict.finished and passed > 0
    counts = f"{passed} of {len(tests)} passed"
    if not verdict.finished:
        return False, f"{counts}; {verdict.why_unfinished}"
    if bad:
        detail = ", ".join(f"{t} {verdict.outcomes.get(t, 'missing')}" for t in bad[:SHOWN_TESTS])
        more = f" and {len(bad) - SHOWN_TESTS} more" if len(bad) > SHOWN_TESTS else ""
        return False, f"{counts}: {detail}{more}"
    if not passed:
        return False, f"no test ran ({len(tests)} skipped)"
    return ok, counts + (f" ({len(tests) - passed} skipped)" if passed < len(tests) else "")
