#!/usr/bin/env python3
"""ran_tests (and, unscored, the commands), read from the run's transcript (`transcript.jsonl`:
the same format for every harness): did the agent run pytest?"""

import json
import sys
from pathlib import Path

context = json.loads(Path(sys.argv[1]).read_text())
commands = []
with open(context["transcript"]) as transcript:
    for line in transcript:
        entry = json.loads(line)
        if entry.get("type") == "message" and entry.get("role") == "assistant":
            commands += [
                str(call.get("command", ""))
                for call in entry.get("tool_calls", [])
                if call.get("kind") == "run"
            ]
ran = [command for command in commands if "pytest" in command]
print(
    json.dumps(
        {
            "metrics": {"ran_tests": bool(ran), "commands": commands},
            "reasons": {"ran_tests": ran[0] if ran else f"{len(commands)} commands, no pytest"},
        }
    )
)
