#!/usr/bin/env python3
"""scope_clean: the run changed no file outside the ones named as arguments before the context."""

import json
import sys
from pathlib import Path

*allowed, context_file = sys.argv[1:]
context = json.loads(Path(context_file).read_text())
outside = [path for path in context["changed_files"] if path not in allowed]
print(
    json.dumps(
        {
            "metrics": {"scope_clean": not outside},
            "reasons": {
                "scope_clean": "outside scope: " + ", ".join(outside) if outside else "in scope"
            },
        }
    )
)
