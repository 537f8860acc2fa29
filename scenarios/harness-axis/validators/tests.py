#!/usr/bin/env python3
"""tests_pass: the etalon's own test suite passes on the run's result."""

import json
import subprocess
import sys
from pathlib import Path

context = json.loads(Path(sys.argv[1]).read_text())
result = subprocess.run(
    [sys.executable, "-m", "unittest", "-q"],
    cwd=context["workdir"],
    capture_output=True,
    text=True,
    timeout=60,
)
summary = (result.stderr.strip().splitlines() or ["no output"])[-1]
print(
    json.dumps(
        {"metrics": {"tests_pass": result.returncode == 0}, "reasons": {"tests_pass": summary}}
    )
)
