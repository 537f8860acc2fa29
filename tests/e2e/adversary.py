"""Adversarial agents for end-to-end tests: offline policies written from harness-neutral
steps, and the demo rebuilt with one cell per policy, run by the real workflow."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from tests.e2e.workflow import SNAKEMAKE


def run_step(name: str, command: str) -> dict:
    return {"id": name, "say": f"Trying {name}.", "action": "run", "command": command}


def policy_text(steps: list[dict]) -> str:
    """An offline policy, as TOML, from harness-neutral steps."""
    lines = ['[policy]\ndescription = "An adversary."\n']
    for number, step in enumerate(steps):
        lines.append("[[steps]]")
        lines.append(f'id = "{step.get("id", f"step-{number}")}"')
        lines.append(f"say = {json.dumps(step.get('say', 'Working.'))}")
        lines += [
            f"{key} = {json.dumps(value)}"
            for key, value in step.items()
            if key not in ("id", "say")
        ]
        lines.append("")
    lines.append('[final]\ntext = "Done."\n\n[judge]\ndefault_chance = 0.5\n')
    return "\n".join(lines)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def scenario_with_cells(
    project: Path, cells: dict[str, list[dict]], scenario: str = "demo", limits: str = ""
) -> None:
    """The demo with one cell per entry, each driven by its own policy file; `limits`, the line
    that replaces the scenario's own (e.g. small enough for a probe to pass them quickly)."""
    toml = project / scenario / "scenario.toml"
    text = toml.read_text()
    for name, steps in cells.items():
        (project / scenario / f"{name}.toml").write_text(policy_text(steps))
    first = next(iter(cells))
    text = text.replace('model = "demo"', f'model = "{first}.toml"')
    start, end = text.index("[axes]"), text.index("[validation]")
    axes = "[axes]\nattack = [" + ", ".join(f'"{name}"' for name in cells) + "]\n\n"
    deltas = "".join(
        f'[deltas.attack.{name}]\nmodel = "{name}.toml"\n\n' for name in list(cells)[1:]
    )
    text = text[:start] + axes + deltas + text[end:]
    lines = [
        limits if limits and line.startswith("limits = ") else line for line in text.splitlines()
    ]
    toml.write_text("\n".join(lines) + "\n")


def run_workflow(project: Path) -> subprocess.CompletedProcess:
    """The real workflow, as a person runs it; every job must succeed."""
    return subprocess.run(
        [str(SNAKEMAKE), "--cores", "2", "--keep-going"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
