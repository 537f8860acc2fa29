#!/usr/bin/env python3
"""ran_tests and turns, read from the agent's raw event stream (pi --mode json)."""

import json
import sys

context = json.load(open(sys.argv[1]))
commands = []
turns = 0
with open(context["stream"]) as stream:
    for line in stream:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") == "turn_start":
            turns += 1
        if event.get("type") == "tool_execution_start" and event.get("toolName") == "bash":
            commands.append(str((event.get("args") or {}).get("command", "")))
ran = [c for c in commands if "unittest" in c or "pytest" in c]
print(
    json.dumps(
        {
            "metrics": {"ran_tests": bool(ran), "turns": turns, "bash_commands": commands},
            "reasons": {"ran_tests": ran[0] if ran else f"{len(commands)} bash commands, none ran tests"},
        }
    )
)
