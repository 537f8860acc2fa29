"""A mining, start to end: the history walked, each candidate tried, the tasks written.

Each candidate is tried once on each side (its parent without the fix, and with it); one that
has a fail-to-pass test is tried until each side has `repeats` tries. A dropped candidate's tag
and hidden tests are removed, so the output holds the kept tasks alone.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentab.etalon.repository import git
from agentab.mining.decide import REPEATS, Decision, decide, first_look, funnel
from agentab.mining.history import (
    Commit,
    check_ancestor,
    commits_between,
    resolve,
    suite_files,
    task_name,
    why_not_a_candidate,
)
from agentab.mining.output import (
    Mined,
    clear_earlier_mining,
    prompt_for,
    write_record,
    write_tasks,
)
from agentab.mining.trial import Settings, Side, try_side
from agentab.mining.workspace import BUNDLE, MiningRepo
from agentab.validators.tests_collect import matches_runner


@dataclass
class Request:
    """What the person asked for."""

    source: str
    since: str
    until: str = "HEAD"
    limit: int | None = None  # stop once this many tasks are kept
    repeats: int = REPEATS
    issues: dict[str, str] = field(default_factory=dict)
    name: str = "mined"


@dataclass
class Outcome:
    """What the mining found: every commit's fate, and the kept tasks."""

    commits: list[dict] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    kept: list[Mined] = field(default_factory=list)

    def record(self, request: Request) -> dict:
        return {
            "source": request.source,
            "since": request.since,
            "until": request.until,
            "repeats": request.repeats,
            "commits_walked": len(self.commits),
            "funnel": funnel(self.decisions),
            "commits": self.commits,
        }


Progress = Callable[[int, int, Commit, str], None]


def runner_targets(commit: Commit, runner: str) -> list[str]:
    return [path for path in commit.test_files() if matches_runner(path, runner)]


def mine(request: Request, out: Path, settings: Settings, progress: Progress) -> Outcome:
    clear_earlier_mining(out)
    repo = MiningRepo(out)
    repo.copy_from(request.source)
    commits = walked_commits(repo, request)
    outcome, names = Outcome(), set()
    candidates = []
    for commit in commits:
        why = why_not_a_candidate(commit)
        if why is None and not runner_targets(commit, settings.runner):
            why = f"changes no test file {settings.runner} collects"
        entry = {"sha": commit.sha, "subject": commit.subject, "candidate": why is None}
        if why is not None:
            entry["reason"] = why
        else:
            candidates.append((commit, entry))
        outcome.commits.append(entry)
    for index, (commit, entry) in enumerate(candidates, start=1):
        if request.limit is not None and len(outcome.kept) >= request.limit:
            entry["reason"] = f"not tried: --limit {request.limit} tasks were kept"
            continue
        name = task_name(commit, names)
        progress(index, len(candidates), commit, "trying")
        decision, tag = try_candidate(repo, commit, name, settings, request.repeats)
        outcome.decisions.append(decision)
        entry |= {"dropped_at": decision.dropped_at, "reason": decision.reason}
        if decision.kept:
            entry["task"] = name
            outcome.kept.append(
                Mined(name, commit, tag, decision, prompt_for(commit, request.issues))
            )
        else:
            forget(repo, name, tag)
        progress(index, len(candidates), commit, decision.reason)
    if outcome.kept:
        repo.bundle([task.tag for task in outcome.kept], out / BUNDLE)
        write_tasks(out, request.name, request.source, outcome.kept, settings)
    write_record(out, outcome.record(request))
    return outcome


def walked_commits(repo: MiningRepo, request: Request) -> list[Commit]:
    """The commits after `--since` up to `--until`, once `--since` is known to be before it."""
    since = resolve(repo.bare, request.since, "--since")
    until = resolve(repo.bare, request.until, "--until")
    check_ancestor(repo.bare, (request.since, since), (request.until, until))
    return commits_between(repo.bare, since, until)


def try_candidate(
    repo: MiningRepo, commit: Commit, name: str, settings: Settings, repeats: int
) -> tuple[Decision, str]:
    tag = repo.tag(name, commit.parent)
    hidden = repo.out / "hidden" / name
    repo.write_hidden(commit, hidden)
    folder = repo.work / "tried" / name
    empty, fix = folder / "empty.patch", folder / "fix.patch"
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.write_bytes(b"")
    repo.write_fix(commit, fix)
    tests = runner_targets(commit, settings.runner)
    if not settings.suite:
        # No suite named: every test the runner finds must keep passing, the files the commit
        # left alone too (a fix that breaks one of those is no task).
        whole = suite_files(repo.bare, commit.parent, settings.runner)
        tests += [path for path in whole if path not in tests]

    def side(patch: Path, label: str, attempt: int) -> Side:
        audit = folder / f"{label}-{attempt}"
        return try_side(repo, tag, f"hidden/{name}", tests, patch, settings, audit)

    befores, afters = [side(empty, "before", 1)], [side(fix, "after", 1)]
    if first_look(befores[0], afters[0]) is None:
        for attempt in range(2, repeats + 1):
            befores.append(side(empty, "before", attempt))
            afters.append(side(fix, "after", attempt))
    return decide(befores, afters), tag


def forget(repo: MiningRepo, name: str, tag: str) -> None:
    shutil.rmtree(repo.out / "hidden" / name, ignore_errors=True)
    git("tag", "--delete", tag, cwd=repo.bare, check=False)


def print_progress(index: int, total: int, commit: Commit, said: str) -> None:
    """A bar and the candidate in hand, on the terminal; one line per candidate otherwise."""
    width = 20
    filled = round(width * (index - (said == "trying")) / max(total, 1))
    bar = "#" * filled + "." * (width - filled)
    line = f"[{bar}] {index}/{total} {commit.sha[:7]} {commit.subject[:40]}: {said}"
    if sys.stderr.isatty():
        end = "\r" if said == "trying" else "\n"
        print(f"\x1b[2K{line}", end=end, file=sys.stderr, flush=True)
    elif said != "trying":
        print(line, file=sys.stderr, flush=True)
