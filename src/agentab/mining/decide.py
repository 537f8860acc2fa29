"""Whether a tried candidate becomes a task, and if not, why: from its tests' outcomes alone.

A candidate is kept when, each of `REPEATS` times, the tests it adds or changes include some
that fail before the fix and pass after it (fail-to-pass), and every other test passes both
before and after (pass-to-pass). Each stage of the funnel drops what fails it, and says why:

    candidates → builds → fail-to-pass → stable → kept

A test skipped on both sides counts for neither list. The first try of each side decides the
early stages; only a candidate that has a fail-to-pass test is tried again, and a test whose
outcome changes between tries makes the candidate flaky, whatever else it shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentab.mining.trial import Side

REPEATS = 3
STAGES = ("candidates", "builds", "fail-to-pass", "stable", "kept")
NOT_PASSING = ("failed", "error", "missing")
SHOWN = 3


@dataclass(frozen=True)
class Decision:
    """A candidate's fate: the stage that dropped it (None when kept), why, and its tests."""

    dropped_at: str | None
    reason: str
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)

    @property
    def kept(self) -> bool:
        return self.dropped_at is None


def dropped(stage: str, reason: str) -> Decision:
    return Decision(stage, reason)


def shown(tests: list[str]) -> str:
    more = f" and {len(tests) - SHOWN} more" if len(tests) > SHOWN else ""
    return ", ".join(tests[:SHOWN]) + more


def partition(before: Side, after: Side) -> dict[str, list[str]]:
    """Each test of either side by what the fix did to it."""
    found: dict[str, list[str]] = {"fixed": [], "kept": [], "broken": [], "failing": []}
    for test in sorted(set(before.outcomes) | set(after.outcomes)):
        was = before.outcomes.get(test, "missing")
        now = after.outcomes.get(test, "missing")
        if now == "passed" and was in NOT_PASSING:
            found["fixed"].append(test)
        elif now == "passed" and was == "passed":
            found["kept"].append(test)
        elif was == "passed" and now != "skipped":
            found["broken"].append(test)
        elif was in NOT_PASSING and now in NOT_PASSING:
            found["failing"].append(test)
    return found


def build_problem(before: Side, after: Side) -> str | None:
    if not before.built:
        return f"does not build before the fix: {before.problem}"
    if not after.built:
        return f"does not build with the fix: {after.problem}"
    if after.unfinished:
        return f"its tests do not finish with the fix: {after.unfinished}"
    return None


def first_look(before: Side, after: Side) -> Decision | None:
    """The early stages, from one try of each side: a Decision when they drop the candidate,
    None when it goes on to be tried again."""
    if problem := build_problem(before, after):
        return dropped("builds", problem)
    if not partition(before, after)["fixed"]:
        passing = [t for t, outcome in before.outcomes.items() if outcome == "passed"]
        if passing and len(passing) == len(before.outcomes):
            return dropped("fail-to-pass", "its tests pass without the fix")
        return dropped("fail-to-pass", "no test goes from failing to passing with the fix")
    return None


def changing(sides: list[Side]) -> list[str]:
    """The tests whose outcome is not the same on every try of one side."""
    tests = set().union(*(side.outcomes for side in sides))
    return sorted(t for t in tests if len({s.outcomes.get(t, "missing") for s in sides}) > 1)


def decide(befores: list[Side], afters: list[Side]) -> Decision:
    """The whole decision, from every try of both sides (the first of each decides first)."""
    if early := first_look(befores[0], afters[0]):
        return early
    for sides, when in ((befores, "before"), (afters, "with")):
        if problem := next((side.problem for side in sides if not side.built), None):
            return dropped("stable", f"flaky: a later try {when} the fix did not build: {problem}")
        if flaky := changing(sides):
            return dropped(
                "stable",
                f"flaky: {shown(flaky)} changed outcome between {len(sides)} tries {when} the fix",
            )
    found = partition(befores[0], afters[0])
    if found["broken"]:
        return dropped("fail-to-pass", f"breaks tests that passed before: {shown(found['broken'])}")
    if found["failing"]:
        return dropped(
            "fail-to-pass", f"tests fail with and without the fix: {shown(found['failing'])}"
        )
    return Decision(None, "kept", found["fixed"], found["kept"])


def funnel(decisions: list[Decision]) -> dict[str, int]:
    """How many candidates reached each stage (a candidate dropped at a stage did not)."""
    counts = {}
    for index, stage in enumerate(STAGES):
        later = STAGES[: index + 1]
        counts[stage] = sum(1 for d in decisions if d.dropped_at not in later)
    return counts
