#!/usr/bin/env python3
"""ran_tests and turns (and, unscored, tool_calls and commands), read from the run's transcript
(`transcript.jsonl`: the same format for every harness)."""

import json
import sys
from pathlib import Path

context = json.loads(Path(sys.argv[1]).read_text())
commands = []
tool_calls = 0
turns = 0
with open(context["transcript"]) as transcript:
    for line in transcript:
        entry = json.loads(line)
        if entry.get("type") == "message" and entry.get("role") == "assistant":
            turns += 1
            for call in entry.get("tool_calls", []):
                tool_calls += 1
                if call.get("kind") == "run":
                    commands.append(str(call.get("command", "")))
ran = [c for c in commands if "unittest" in c or "pytest" in c]
print(
    json.dumps(
        {
            "metrics": {
                "ran_tests": bool(ran),
                "turns": turns,
                "tool_calls": tool_calls,
                "commands": commands,
            },
            "reasons": {
                "ran_tests": ran[0] if ran else f"{len(commands)} commands, none ran tests"
            },
        }
    )
)
