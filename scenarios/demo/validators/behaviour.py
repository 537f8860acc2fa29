#!/usr/bin/env python3
"""ran_tests and turns (and, unscored, tool_calls and bash_commands), read from the agent's raw event stream (pi --mode json)."""

import json
import sys
from pathlib import Path

context = json.loads(Path(sys.argv[1]).read_text())
commands = []
tool_calls = 0
turns = 0
with open(context["stream"]) as stream:
    for line in stream:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") == "turn_start":
            turns += 1
        if event.get("type") == "tool_execution_start":
            tool_calls += 1
            if event.get("toolName") == "bash":
                commands.append(str((event.get("args") or {}).get("command", "")))
ran = [c for c in commands if "unittest" in c or "pytest" in c]
print(
    json.dumps(
        {
            "metrics": {
                "ran_tests": bool(ran),
                "turns": turns,
                "tool_calls": tool_calls,
                "bash_commands": commands,
            },
            "reasons": {
                "ran_tests": ran[0] if ran else f"{len(commands)} bash commands, none ran tests"
            },
        }
    )
)
