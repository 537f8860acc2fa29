"""The benchmarks run in their quick mode as part of the suite, so they cannot rot.

Budgets are checked by the full runs (`python benchmarks/<name>.py`), never by a timed test:
the figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("script", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_benchmark_runs_in_quick_mode(script: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.strip(), "a benchmark prints its figures"
