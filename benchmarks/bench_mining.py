"""What `agentab tasks mine` costs per candidate, on a generated history of COMMITS commits.

The history: a module of small functions, each with a bug; of every five commits, two fix a bug
and add its test (candidates that are kept), one changes a test that already passes with a code
change beside it (a candidate dropped after one try of each side), one changes code alone and
one the changelog (no candidates). The tests run with unittest, no setup, in the sandbox, each
kept candidate tried three times per side. Printed: the walk, the time per candidate of each
kind and per try of a side.

    python benchmarks/bench_mining.py [--commits 50] [--quick] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agentab.mining.mine import Request, mine
from agentab.mining.trial import Settings

IDENTITY = {
    "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.invalid",
    "GIT_COMMITTER_NAME": "dev", "GIT_COMMITTER_EMAIL": "dev@example.invalid",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
    "PATH": "/usr/bin:/bin",
}  # fmt: skip


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=IDENTITY, check=True, capture_output=True)


def function(number: int, fixed: bool) -> str:
    return f"def f{number}(x):\n    return x + {number if fixed else number + 1}\n\n\n"


def test_file(numbers: list[int]) -> str:
    body = "".join(
        f"    def test_f{n}(self):\n        self.assertEqual(lib.f{n}(1), {n + 1})\n\n"
        for n in numbers
    )
    return f"import unittest\n\nimport lib\n\n\nclass TestLib(unittest.TestCase):\n{body}    pass\n"


def make_history(repo: Path, commits: int) -> int:
    """The history after the tag `base`; returns how many bugs it fixes."""
    bugs = (commits // 5) * 2 + 2
    fixed: set[int] = set()
    tested: list[int] = []
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")

    def write(message: str) -> None:
        (repo / "lib.py").write_text("".join(function(n, n in fixed) for n in range(bugs)))
        (repo / "tests").mkdir(exist_ok=True)
        (repo / "tests" / "__init__.py").write_text("")
        (repo / "tests" / "test_lib.py").write_text(test_file(tested))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", message)

    write("start")
    git(repo, "tag", "base")
    for index in range(commits):
        kind = index % 5
        if kind in (0, 1):
            bug = len(fixed)
            fixed.add(bug)
            tested.append(bug)
            write(f"Fix f{bug}")
        elif kind == 2:
            (repo / "version.py").write_text(f"VERSION = {index}\n")
            tested.append(tested[0] if tested else 0)
            write(f"Test f{tested[-1]} again")
        elif kind == 3:
            (repo / "extra.py").write_text(f"VALUE = {index}\n")
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", f"Refactor {index}")
        else:
            (repo / "CHANGELOG.md").write_text(f"- change {index}\n")
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", f"Changelog {index}")
    return len(fixed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="10 commits")
    parser.add_argument("--keep", action="store_true", help="keep the folder")
    args = parser.parse_args()
    commits = 10 if args.quick else args.commits
    root = Path(tempfile.mkdtemp(prefix="bench-mining-"))
    try:
        make_history(root / "lib", commits)
        marks: dict[str, float] = {}
        kinds: dict[str, list[float]] = {"kept": [], "dropped": []}

        def progress(index, total, commit, said):
            if said == "trying":
                marks[commit.sha] = time.perf_counter()
            else:
                kind = "kept" if said == "kept" else "dropped"
                kinds[kind].append(time.perf_counter() - marks[commit.sha])

        start = time.perf_counter()
        outcome = mine(
            Request(str(root / "lib"), "base"), root / "out", Settings(runner="unittest"), progress
        )
        total = time.perf_counter() - start
        print(
            f"bench_mining: {commits} commits, cores {os.cpu_count()}, load {os.getloadavg()[0]:.1f}"
        )
        print(f"  funnel: {outcome.record(Request('', 'base'))['funnel']}")
        print(
            f"  whole mining: {total:.2f} s ({total / max(len(outcome.decisions), 1):.2f} s per candidate)"
        )
        for kind, times in kinds.items():
            if times:
                tries = 6 if kind == "kept" else 2
                median = statistics.median(times)
                print(
                    f"  {kind:8} candidates: {len(times):3}, median {median:.2f} s each "
                    f"({median / tries:.2f} s per try of a side; {tries} tries)"
                )
        if not kinds["kept"]:
            raise SystemExit("bench_mining: FAILED: no candidate was kept")
    finally:
        if args.keep:
            print(f"  kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
