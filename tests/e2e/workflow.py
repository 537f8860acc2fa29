"""Helpers for end-to-end tests of the workflow: a user's project in a temp dir, and snakemake."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"
WORKFLOW_FILES = ("Snakefile", "rules", "scripts", "config", "profiles", "envs")


def make_project(
    root: Path, harnesses_dir: Path, repetitions: int = 2, scenario: str = "demo"
) -> Path:
    """A working directory laid out as a user's: the workflow, and scenarios/<scenario> copied."""
    root.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name)
        else:
            shutil.copy2(source, root / name)
    shutil.copytree(REPO / "scenarios" / scenario, root / scenario)
    toml = root / scenario / "scenario.toml"
    text = toml.read_text()
    toml.write_text(re.sub(r"(?m)^repetitions = \d+", f"repetitions = {repetitions}", text))
    config = root / "config" / "config.yaml"
    config.write_text(
        f"scenarios:\n  - {scenario}/scenario.toml\nresults: results\nstate: .agentab\n"
        f"harnesses: {harnesses_dir}\n"
    )
    return root


def snakemake(project: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SNAKEMAKE), "--cores", "2", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def job_counts(output: str) -> dict[str, int]:
    """The 'Job stats' table snakemake prints: rule -> number of jobs ({} when nothing to do).

    The target rule `all` is left out: it is listed whenever anything else runs.
    """
    counts: dict[str, int] = {}
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line.strip().startswith("job") and "count" in line:
            for row in lines[index + 2 :]:
                parts = row.split()
                if len(parts) != 2 or not parts[1].isdigit():
                    break
                if parts[0] not in ("total", "all"):
                    counts[parts[0]] = int(parts[1])
            break
    return counts


def measures_files(project: Path) -> list[Path]:
    return sorted((project / "results" / "demo" / "runs").glob("*/r*/measures.json"))
