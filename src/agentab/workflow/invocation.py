"""The command that ran a results folder, kept so that a command printed later is that one.

`agentab redo` removes runs and tells a person what redoes them. A made-up `snakemake --cores 8`
is wrong for a scenario the config does not list, for a project whose scenario file lies
elsewhere, and for a person who uses a profile; the command that last ran jobs on this results
folder, from its working folder, is right. So each workflow that starts jobs (not a dry run)
writes it into every results folder it runs: its working folder, its command line and the
scenario file the config named, never an environment variable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agentab.files import write_json


def record_invocation(workflow, argv: list[str]) -> None:
    """From `rules/common.smk`, in the main Snakemake process of a run that starts jobs."""
    cwd = os.getcwd()
    for name in workflow.scenarios:
        results = workflow.layout.results(name)
        results.path.mkdir(parents=True, exist_ok=True)
        scenario = Path(workflow.scenario_file(name))
        write_json(
            {
                "cwd": cwd,
                "argv": [str(argument) for argument in argv],
                "scenario_file": str(scenario if scenario.is_absolute() else Path(cwd) / scenario),
                "results_root": str(Path(cwd) / workflow.layout.results_root),
            },
            results.invocation,
        )


def read_invocation(path: Path) -> dict | None:
    """The recorded invocation, or None when there is none (a folder from before, or by hand)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("argv"), list) or not data["argv"]:
        return None
    if not all(isinstance(data.get(key), str) for key in ("cwd", "scenario_file")):
        return None
    return data
