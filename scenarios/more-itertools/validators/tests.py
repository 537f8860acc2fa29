#!/usr/bin/env python3
"""bug_fixed and suite_passes, scored on the run's own code in its own checkout.

Runs with the Python the etalon's setup made (`[etalon] path` comes first on this validator's
PATH). `bug_fixed` runs a test the agent never saw (hidden/, beside this file), and checks that
the package it imported is the checkout's: a copy installed anywhere else would score that
copy, not the run's code. `suite_passes` runs the project's own suite.
"""

import json
import subprocess
import sys
from pathlib import Path

HIDDEN = Path(__file__).resolve().parent / "hidden" / "test_partition_none.py"

context = json.loads(Path(sys.argv[1]).read_text())
workdir = Path(context["workdir"])
try:
    import pytest  # noqa: F401  (the environment's, not this script's)
except ImportError:
    sys.exit(f"no pytest in {sys.executable}: the scenario's [etalon] setup must install it")


def pytest_run(*args: str) -> tuple[bool, str]:
    # `python -m` puts the working folder first on sys.path: the checkout's package is imported.
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=150,
    )
    lines = done.stdout.strip().splitlines() or ["no output"]
    return done.returncode == 0, lines[-1]


fixed, fixed_why = pytest_run(str(HIDDEN))
suite, suite_why = pytest_run("tests")
print(
    json.dumps(
        {
            "metrics": {"bug_fixed": fixed, "suite_passes": suite},
            "reasons": {"bug_fixed": fixed_why, "suite_passes": suite_why},
        }
    )
)
