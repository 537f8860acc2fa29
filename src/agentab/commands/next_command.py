"""The `snakemake` command that works on a given results folder, for a command to print.

The command that last ran jobs on the folder is the exact one (`workflow/invocation.py` keeps
it: its working folder, its arguments, profile included): it is printed as it was given, from
its folder. A folder without it (made before, or by hand) gets a command made up for it: a bare
`snakemake` runs the scenarios of config/config.yaml into its `results` folder, and for a results
folder of any other scenario it says "Nothing to be done", so the command printed then names the
scenario file whose results these are (found by its `[scenario] name`, the name of the results
folder, preferring the file whose text is the frozen copy's) and the results folder, unless the
config already says both.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path

import yaml

from agentab.layout import ResultsFolder
from agentab.workflow.invocation import read_invocation

DEFAULT_CONFIG = Path("config/config.yaml")
DEFAULT_RESULTS = "results"
# Every core of the machine it runs on: a fixed number is wrong on most.
CORES = "--cores all"
# Where scenario files usually are, from the project folder: each scenario in a folder of its own.
SCENARIO_GLOBS = ("scenarios/*/scenario.toml", "scenarios/*.toml", "*/scenario.toml")


def snakemake_command(results_dir: Path, config: Path = DEFAULT_CONFIG) -> str:
    """The command that last ran `results_dir`, from its folder; else `snakemake --cores all`,
    with the --config that makes it work on `results_dir`."""
    results_dir = Path(results_dir)
    recorded = read_invocation(ResultsFolder(results_dir).invocation)
    if recorded is not None and ran_here(recorded, results_dir):
        return recorded_command(recorded)
    settings = _read_config(config)
    results_root = Path(settings.get("results") or DEFAULT_RESULTS)
    same_root = _same_path(results_root, results_dir.parent)
    configured = [Path(p) for p in settings.get("scenarios") or []]
    if same_root and any(_scenario_name(p) == results_dir.name for p in configured):
        return f"snakemake {CORES}"
    source = find_scenario_file(results_dir)
    shown = str(source) if source else f"<the scenario file of {results_dir.name}>"
    parts = [f"snakemake {CORES} --config 'scenarios={json.dumps([shown])}'"]
    if not same_root:
        parts.append(f"'results={results_dir.parent}'")
    return " ".join(parts)


def ran_here(recorded: dict, results_dir: Path) -> bool:
    """Whether the recorded command wrote into this very folder: a results folder copied or
    moved elsewhere keeps the record of a command that works on the original."""
    root = recorded.get("results_root")
    return isinstance(root, str) and _same_path(Path(root) / results_dir.name, results_dir)


def recorded_command(recorded: dict) -> str:
    """The recorded command as a shell takes it, preceded by `cd` when it ran elsewhere."""
    command = shlex.join(recorded["argv"])
    if _same_path(Path(recorded["cwd"]), Path.cwd()):
        return command
    return f"cd {shlex.quote(recorded['cwd'])} && {command}"


def find_scenario_file(results_dir: Path) -> Path | None:
    """The scenario file these results come from: of the scenario files under the working
    folder named as the results folder, the one whose text is the frozen copy's, else the first."""
    frozen = _read_bytes(results_dir / "scenario.toml")
    named = [
        path
        for pattern in SCENARIO_GLOBS
        for path in sorted(Path().glob(pattern))
        if _scenario_name(path) == results_dir.name
    ]
    named = list(dict.fromkeys(named))
    for path in named:
        if frozen is not None and _read_bytes(path) == frozen:
            return path
    return named[0] if named else None


def _read_config(config: Path) -> dict:
    try:
        data = yaml.safe_load(Path(config).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _scenario_name(path: Path) -> str | None:
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    table = data.get("scenario")
    return table.get("name") if isinstance(table, dict) else None


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _same_path(one: Path, other: Path) -> bool:
    return one.resolve() == other.resolve()
