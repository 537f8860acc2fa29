#!/usr/bin/env python3
"""ran_tests and turns (and, unscored, tool_calls and commands), read from the run's transcript
(`transcript.jsonl`: the same format for every harness).

A test command counts as run when the test runner's own report came back as its output
(unittest's "Ran N tests", pytest's summary line): a real model's call that the harness refused
before running it (bash with `timeout: 0`) asked for the tests and never ran them.
"""

import json
import re
import sys
from pathlib import Path

REPORT = re.compile(r"^Ran \d+ tests? in |^=+ .*\b(passed|failed|error)", re.MULTILINE)

context = json.loads(Path(sys.argv[1]).read_text())
commands = []
outputs = {}
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
                    commands.append((call.get("id"), str(call.get("command", ""))))
        elif entry.get("type") == "tool_result":
            outputs[entry.get("id")] = str(entry.get("output", ""))
asked = [c for i, c in commands if "unittest" in c or "pytest" in c]
ran = [c for i, c in commands if c in asked and REPORT.search(outputs.get(i, ""))]
print(
    json.dumps(
        {
            "metrics": {
                "ran_tests": bool(ran),
                "turns": turns,
                "tool_calls": tool_calls,
                "commands": [c for _, c in commands],
            },
            "reasons": {
                "ran_tests": ran[0]
                if ran
                else f"{len(commands)} commands, {len(asked)} asked for the tests, none ran them"
            },
        }
    )
)
