"""What it costs that a run's clone holds the etalon tag and its past only.

A repository of COMMITS commits (a file changed in each) and a tag every TAG_EVERY commits is
mirrored; the etalon is a tag halfway. Printed: the once-per-tag pristine checkout (fetched by
the tag's ref, as agentab does, against a full clone of the mirror, as it did), and the per-run
clone (a copy of that checkout, then agentab's controlled git directory and check), with the
objects and refs each clone holds.

    python benchmarks/bench_clone_history.py [--commits 400]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agentab.etalon import fresh_clone, git, pristine_checkout
from agentab.etalon.repository import GIT_IDENTITY

RUNS = 10
TAG_EVERY = 20


def make_history(repo: Path, commits: int) -> str:
    """A history with a tag every TAG_EVERY commits; returns the tag halfway."""
    ident = ["-c", f"user.name={GIT_IDENTITY[0]}", "-c", f"user.email={GIT_IDENTITY[1]}"]
    git("init", "-q", "-b", "main", str(repo))
    import_lines = []
    for number in range(commits):
        import_lines.append(
            f"commit refs/heads/main\ncommitter a <a@a> {1700000000 + number} +0000"
        )
        message = f"change {number}"
        import_lines.append(f"data {len(message)}\n{message}")
        body = "".join(f"line {number} {k}\n" for k in range(200))
        import_lines.append(f"M 644 inline src/file_{number % 50}.py\ndata {len(body)}\n{body}")
    subprocess.run(
        ["git", "fast-import", "--quiet"], cwd=repo, input="\n".join(import_lines) + "\n",
        text=True, check=True, capture_output=True,
    )  # fmt: skip
    shas = git("rev-list", "--reverse", "main", cwd=repo).split()
    for number in range(TAG_EVERY - 1, commits, TAG_EVERY):
        git(*ident, "tag", f"v{number}", shas[number], cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    half = (commits // 2 // TAG_EVERY) * TAG_EVERY - 1
    return f"v{half}"


def clone_contents(clone: Path) -> tuple[int, int]:
    objects = git("cat-file", "--batch-all-objects", "--batch-check=%(objectname)", cwd=clone)
    refs = git("for-each-ref", "--format=%(refname)", cwd=clone)
    return len(objects.split()), len(refs.split())


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def full_clone_checkout(mirror: Path, tag: str, dest: Path) -> None:
    """How a pristine checkout was made before: a clone of the whole mirror."""
    git(
        "clone", "--quiet", "--template=", "--no-hardlinks", "--no-checkout", str(mirror), str(dest)
    )
    git("checkout", "--quiet", "--detach", f"refs/tags/{tag}", cwd=dest)
    git("remote", "remove", "origin", cwd=dest)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="a small history (the test suite)")
    args = parser.parse_args()
    commits = 60 if args.quick else args.commits
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        repo, mirrors = root / "repo", root / "mirrors"
        tag = make_history(repo, commits)
        once = timed(lambda: pristine_checkout(str(repo), tag, mirrors))  # the mirror, once
        mirror = next(mirrors.glob("*.git"))
        shutil.rmtree(mirror / "agentab-checkouts")
        past_only = timed(lambda: pristine_checkout(str(repo), tag, mirrors))
        full = root / "full"
        whole = timed(lambda: full_clone_checkout(mirror, tag, full))
        pristine = pristine_checkout(str(repo), tag, mirrors)[0]
        steps, copies = [], {"past only": [], "full history": []}
        for run in range(RUNS):
            dest = root / "runs" / f"r{run}" / "repo"
            steps.append(timed(lambda d=dest: fresh_clone(str(repo), tag, d, mirrors)))
            for kind, source in (("past only", pristine), ("full history", full)):
                copy = root / "copies" / kind / f"r{run}"
                copies[kind].append(
                    timed(lambda c=copy, s=source: shutil.copytree(s, c, symlinks=True))
                )
        objects, refs = clone_contents(root / "runs" / "r0" / "repo")
        all_objects, all_refs = clone_contents(full)
        print(f"history: {commits} commits, {all_refs} refs; the etalon is tag {tag}")
        print(f"once per repository, the mirror and a first checkout: {ms(once)}")
        print(f"once per tag, the checkout fetched by its ref:        {ms(past_only)}")
        print(f"once per tag, a clone of the mirror (as before):      {ms(whole)}")
        print(
            f"per run, the clone step (copy, git dir, check):       {ms(statistics.median(steps))}"
        )
        for kind, times in copies.items():
            print(
                f"per run, the copy alone, {kind + ':':13}                {ms(statistics.median(times))}"
            )
        print(
            f"a run's clone holds {objects} objects and {refs} ref; a clone of the mirror {all_objects} and {all_refs}"
        )


if __name__ == "__main__":
    main()
