"""A small synthetic results folder, as the workflow leaves one, for the report's unit tests."""

from __future__ import annotations

import json
from pathlib import Path

SCENARIO = """\
[scenario]
name = "tests-rule"
question = "Does a one-line rule make the agent run the tests?"

[task]
prompt = "Fix mean in calc.py."

[etalon]
repo = "calc.bundle"
tag = "v1.0"

[agent]
harness = "pi"
version = "1.6.0"
provider = "{provider}"
model = "demo"
thinking = "off"
timeout = "2m"

[protocol]
repetitions = {repetitions}

[protocol.limits]
memory = "2G"
processes = 256
disk = "1G"
patch = "1M"

[axes]
context = ["nothing", "rule"]

[deltas.context.rule]
context_files = ["bricks/run-tests.md"]

[validation]
metrics = ["ran_tests", "turns", "readable"]

[validators.tests]
mode = "script"
run = ["validators/tests.py"]

[validators.review]
mode = "form"
fills = ["readable"]
show = ["diff"]
"""

PATCH = """\
diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return sum(values) / (len(values) - 1)
+    return sum(values) / len(values)
"""

LONG_OUTPUT = "\n".join(f"test_{n} ... ok" for n in range(40))


def write_scenario(folder: Path, repetitions: int = 10, provider: str = "offline") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = SCENARIO.format(repetitions=repetitions, provider=provider)
    (folder / "scenario.toml").write_text(text, encoding="utf-8")
    return folder


def write_measures(folder: Path, cell: str, rep: int, metrics: dict, **fields) -> Path:
    run_dir = folder / "runs" / cell / f"r{rep:02d}"
    run_dir.mkdir(parents=True, exist_ok=True)
    measures = {
        "schema": 1,
        "scenario": "tests-rule",
        "cell": cell,
        "rep": rep,
        "run": f"{cell}/r{rep:02d}",
        "status": fields.get("status", "valid"),
        "metrics": metrics,
        "extra": {},
        "reasons": {},
        "problems": fields.get("problems", []),
        "pending": fields.get("pending", ["readable"]),
        "provenance": {
            "etalon_sha": "0123abc",
            "harness": "pi",
            "harness_version": "1.6.0",
            "provider": fields.get("provider", "offline"),
            "model": "demo",
            "thinking": "off",
            "argv": ["node", "cli.js", "--mode", "json", "--", "Fix mean in calc.py."],
            "duration_s": 10.0,
            "tokens": {"input": 1000, "output": 200},
            "cost_usd": fields.get("cost_usd", 0.5),
        },
    }
    (run_dir / "measures.json").write_text(json.dumps(measures), encoding="utf-8")
    return run_dir


def write_run_files(run_dir: Path, final: str = "I fixed mean: it divides by len(values).") -> None:
    """What the run and validate steps leave beside measures.json."""
    transcript = [
        {"type": "message", "role": "user", "text": "Fix mean in calc.py.", "tool_calls": []},
        {
            "type": "message",
            "role": "assistant",
            "text": "Running the tests first.",
            "tool_calls": [
                {
                    "id": "c1",
                    "tool": "bash",
                    "kind": "run",
                    "input": {"command": "python -m unittest"},
                    "command": "python -m unittest",
                }
            ],
            "usage": {"input": 500, "output": 20},
        },
        {
            "type": "tool_result",
            "id": "c1",
            "tool": "bash",
            "output": LONG_OUTPUT,
            "is_error": True,
        },
        {
            "type": "message",
            "role": "assistant",
            "text": "",
            "tool_calls": [
                {"id": "c2", "tool": "read", "kind": "read", "input": {"path": "calc.py"}}
            ],
        },
        {
            "type": "tool_result",
            "id": "c2",
            "tool": "read",
            "output": "def mean(values):",
            "is_error": False,
        },
        {"type": "message", "role": "assistant", "text": final, "tool_calls": []},
    ]
    (run_dir / "transcript.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in transcript), encoding="utf-8"
    )
    (run_dir / "result.patch").write_text(PATCH, encoding="utf-8")
    (run_dir / "stream.jsonl").write_text('{"type": "agent_end"}\n', encoding="utf-8")
    run = {"outcome": {"status": "completed", "reason": None}, "facts": {"final_message": final}}
    (run_dir / "run.json").write_text(json.dumps(run), encoding="utf-8")
    validators = run_dir / "validators"
    validators.mkdir(exist_ok=True)
    output = {
        "validator": "tests",
        "mode": "script",
        "ok": True,
        "metrics": {"ran_tests": True, "turns": 3},
        "reasons": {"ran_tests": "ran python -m unittest <twice>"},
        "problem": None,
    }
    (validators / "tests.json").write_text(json.dumps(output), encoding="utf-8")
    (run_dir / "logs").mkdir(exist_ok=True)
    (run_dir / "logs" / "run.log").write_text("nothing-off/r01: completed\n", encoding="utf-8")


def write_results(folder: Path, repetitions: int = 10) -> Path:
    """Two cells; the rule makes the agent run the tests. Among the runs: one invalid, one
    fault (faults.jsonl, no measures), one missing, one with a receipt."""
    write_scenario(folder, repetitions)
    for rep in range(1, repetitions + 1):
        if rep == repetitions:
            continue  # nothing/r10 missing, rule/r10 a fault
        write_run_files(write_measures(folder, "nothing", rep, {"ran_tests": rep <= 1, "turns": 5}))
        if rep == 2:
            write_measures(
                folder,
                "rule",
                rep,
                {},
                status="invalid",
                problems=["validator tests: exit status 1 (SyntaxError in tests.py)"],
                pending=[],
            )
            continue
        write_run_files(write_measures(folder, "rule", rep, {"ran_tests": True, "turns": 6}))
    fault_dir = folder / "runs" / "rule" / f"r{repetitions:02d}"
    fault_dir.mkdir(parents=True)
    (fault_dir / "faults.jsonl").write_text(
        json.dumps({"attempt": 1, "reason": "provider error 529 overloaded"}) + "\n",
        encoding="utf-8",
    )
    receipt = {
        "schema": 1,
        "requests": 4,
        "delivered": True,
        "thinking": {"declared": "off", "applied": "off", "sent": None, "delivered": True},
        "bricks": [
            {
                "kind": "context_files",
                "rel": "bricks/run-tests.md",
                "delivered": True,
                "evidence": "its text is in the system prompt of request 1",
            }
        ],
    }
    (folder / "runs" / "rule" / "r01" / "receipt.json").write_text(json.dumps(receipt))
    return folder
