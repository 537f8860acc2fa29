"""What the etalon's setup costs a checkout (docs/scenario.md, "Its environment").

    python benchmarks/bench_setup.py [--checkouts 5]
    python benchmarks/bench_setup.py --quick    # the first checkout and one copy (smoke test)

Runs a typical Python setup (a virtualenv with pytest and its pinned dependencies) confined, as
a run does, on fresh clones of the demo etalon, and prints the seconds per checkout:
- cold: the first setup with an empty download cache (every package downloaded);
- warm: the setup again with the shared download cache filled (what a run would pay at every
  checkout if nothing were kept);
- reused: every later checkout, which gets a copy of what the first one made
  (run/environments.py). This is what nearly every run and validator pays.
The target: a reused checkout under 1 s, median, whatever the setup installs. Needs the network
to the package registry (the cold and warm setups download or check packages).
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import statistics
import time
from pathlib import Path

from agentab.etalon import fresh_clone
from agentab.run.setup import run_setup
from agentab.scenario.types import Etalon

TARGET_S = 1.0
REPO = Path(__file__).resolve().parents[1]
SETUP = (
    "python3 -m venv .venv",
    ".venv/bin/pip install -q pytest==8.3.4 iniconfig==2.0.0 packaging==24.2 pluggy==1.5.0",
)


def timed_setup(etalon, state: Path, environments: Path | None) -> tuple[float, bool]:
    folder = state / "work" / secrets.token_hex(6)
    clone = folder / "checkout"
    fresh_clone(etalon.location, etalon.tag, clone, state / "mirrors")
    started = time.perf_counter()
    record = run_setup(
        etalon, clone, folder / "setup.log", state / "cache", folder / "lock", "bwrap",
        environments=environments,
    )  # fmt: skip
    took = time.perf_counter() - started
    assert any(line.startswith("pytest==") for line in record.environment), record.environment
    shutil.rmtree(folder)
    return took, record.reused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkouts", type=int, default=5, help="reused checkouts to time")
    parser.add_argument("--quick", action="store_true", help="no cold or warm setup, one copy")
    args = parser.parse_args()
    if args.quick:
        args.checkouts = 1
    etalon = Etalon(
        repo="calc.bundle",
        location=str(REPO / "scenarios" / "demo" / "calc.bundle"),
        tag="v1.0",
        setup=SETUP,
        path=(".venv/bin",),
        setup_timeout_s=600,
    )
    state = REPO / ".agentab" / "bench-setup" / secrets.token_hex(4)
    try:
        cold, _ = (None, None) if args.quick else timed_setup(etalon, state, None)
        warm, _ = (None, None) if args.quick else timed_setup(etalon, state, None)
        first, reused = timed_setup(etalon, state, state / "environments")
        assert not reused
        copies = [timed_setup(etalon, state, state / "environments") for _ in range(args.checkouts)]
        assert all(reused for _, reused in copies)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    median = statistics.median(took for took, _ in copies)
    print(f"setup: {' && '.join(SETUP)}")
    if cold is not None:
        print(f"cold (empty download cache)     {cold:6.2f} s")
        print(f"warm (download cache filled)    {warm:6.2f} s")
    print(f"first checkout (kept)           {first:6.2f} s")
    print(f"reused, median of {len(copies):<3d}          {median:6.2f} s   target < {TARGET_S:g} s")
    print("met" if median < TARGET_S else "NOT MET")


if __name__ == "__main__":
    main()
