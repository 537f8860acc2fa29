"""How a tried candidate is decided, from its tests' outcomes alone; which commits are candidates."""

from __future__ import annotations

from agentab.mining.decide import decide, first_look, funnel
from agentab.mining.history import Commit, is_test, kind_of, task_name, why_not_a_candidate
from agentab.mining.trial import Side

FIXED = {"t.A.test_new": "passed", "t.A.test_old": "passed"}
BUGGY = {"t.A.test_new": "failed", "t.A.test_old": "passed"}


def tries(*outcomes: dict) -> list[Side]:
    return [Side(dict(found)) for found in outcomes]


def test_a_test_that_fails_before_and_passes_after_every_time_is_kept():
    decision = decide(tries(BUGGY, BUGGY, BUGGY), tries(FIXED, FIXED, FIXED))
    assert decision.kept
    assert decision.fail_to_pass == ["t.A.test_new"] and decision.pass_to_pass == ["t.A.test_old"]


def test_a_test_missing_before_the_fix_is_fail_to_pass():
    before = {"t.A.test_old": "passed"}  # the new test's module did not import
    decision = decide(tries(before, before, before), tries(FIXED, FIXED, FIXED))
    assert decision.kept and decision.fail_to_pass == ["t.A.test_new"]


def test_tests_that_pass_without_the_fix_are_no_task():
    decision = first_look(Side(FIXED), Side(FIXED))
    assert decision.dropped_at == "fail-to-pass"
    assert decision.reason == "its tests pass without the fix"


def test_a_candidate_that_breaks_a_passing_test_is_dropped_and_the_test_named():
    after = {"t.A.test_new": "passed", "t.A.test_old": "failed"}
    decision = decide(tries(BUGGY, BUGGY, BUGGY), tries(after, after, after))
    assert decision.dropped_at == "fail-to-pass"
    assert decision.reason == "breaks tests that passed before: t.A.test_old"


def test_a_test_that_fails_on_both_sides_drops_the_candidate():
    before = {**BUGGY, "t.A.test_env": "error"}
    after = {**FIXED, "t.A.test_env": "error"}
    decision = decide(tries(before, before, before), tries(after, after, after))
    assert decision.reason == "tests fail with and without the fix: t.A.test_env"


def test_skipped_on_both_sides_counts_for_neither_list():
    before, after = {**BUGGY, "t.A.test_skip": "skipped"}, {**FIXED, "t.A.test_skip": "skipped"}
    decision = decide(tries(before, before, before), tries(after, after, after))
    assert decision.kept and "t.A.test_skip" not in decision.fail_to_pass + decision.pass_to_pass


def test_an_outcome_that_changes_between_tries_is_flaky_whatever_else_it_shows():
    flipped = {**FIXED, "t.A.test_old": "failed"}
    decision = decide(tries(BUGGY, BUGGY, BUGGY), tries(FIXED, flipped, FIXED))
    assert decision.dropped_at == "stable"
    assert decision.reason == "flaky: t.A.test_old changed outcome between 3 tries with the fix"


def test_a_side_that_does_not_build_is_dropped_first():
    decision = first_look(Side({}, problem="the etalon's setup failed"), Side(FIXED))
    assert decision.dropped_at == "builds"
    assert decision.reason == "does not build before the fix: the etalon's setup failed"
    unfinished = first_look(Side(BUGGY), Side(FIXED, unfinished="timed out after 5s"))
    assert unfinished.reason == "its tests do not finish with the fix: timed out after 5s"


def test_a_later_try_that_does_not_build_is_flaky():
    decision = decide(tries(BUGGY, BUGGY), [Side(FIXED), Side({}, problem="setup timed out")])
    assert decision.dropped_at == "stable" and "did not build" in decision.reason


def test_the_funnel_counts_what_reached_each_stage():
    decisions = [
        decide(tries(BUGGY), tries(FIXED)),
        first_look(Side(FIXED), Side(FIXED)),
        first_look(Side({}, problem="x"), Side(FIXED)),
        decide(tries(BUGGY, BUGGY), tries(FIXED, BUGGY)),
    ]
    assert funnel(decisions) == {
        "candidates": 4, "builds": 3, "fail-to-pass": 2, "stable": 1, "kept": 1,
    }  # fmt: skip


def commit(*changed: tuple[str, str], subject: str = "Fix it") -> Commit:
    return Commit("a" * 40, "b" * 40, subject, "", tuple(changed))


def test_a_candidate_changes_code_and_a_test_it_does_not_remove():
    assert why_not_a_candidate(commit(("M", "src/x.py"), ("A", "tests/test_x.py"))) is None
    assert why_not_a_candidate(commit(("M", "src/x.py"), ("M", "README.md"))) == "changes no test"
    assert why_not_a_candidate(commit(("M", "tests/test_x.py"))) == "changes tests only"
    assert why_not_a_candidate(commit(("M", "docs/x.py"))) == "changes neither code nor tests"
    removed = commit(("M", "src/x.py"), ("D", "tests/test_x.py"))
    assert why_not_a_candidate(removed) == "changes no test"


def test_what_is_a_test_and_what_is_prose():
    assert is_test("tests/helpers.py") and is_test("pkg/test_a.py") and is_test("a_test.py")
    assert is_test("conftest.py") and not is_test("src/testing.py")
    assert [kind_of(p) for p in ("CHANGELOG.md", "docs/conf.py", "NEWS", "src/a.py")] == [
        "prose", "prose", "prose", "code",
    ]  # fmt: skip


def test_a_task_name_is_a_folder_name_from_the_subject_and_the_sha():
    taken: set[str] = set()
    name = task_name(commit(subject="Fix `parse()` on U+2212 minus signs!"), taken)
    assert name == "fix-parse-on-u-2212-aaaaaaa"
    assert task_name(commit(subject="Fix `parse()` on U+2212 minus signs!"), taken) == f"{name}-x"
    assert task_name(commit(subject="!!!"), set()) == "commit-aaaaaaa"
    assert len(task_name(commit(subject="a" * 80), set())) <= 40
