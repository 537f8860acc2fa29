"""A run's conversation as the field reads it: `trajectory.json` in ATIF (`atif`), and the
behaviour measures every run has (`behaviour`), both from the harness-neutral
`transcript.jsonl` every adapter writes (`transcript`) and run.json.

It reads only files and layer-0 modules, so the measure step, the validators and the report
can all use it.
"""

from agentab.trajectory.atif import (
    SCHEMA_VERSION,
    run_trajectory,
    write_blind_trajectory,
    write_trajectory,
)
from agentab.trajectory.behaviour import (
    CLASSES,
    behaviour_measures,
    pattern_problem,
    tests_pattern,
)
from agentab.trajectory.transcript import read_transcript

__all__ = [
    "CLASSES",
    "SCHEMA_VERSION",
    "behaviour_measures",
    "pattern_problem",
    "read_transcript",
    "run_trajectory",
    "tests_pattern",
    "write_blind_trajectory",
    "write_trajectory",
]
