"""The name each brick's use is measured under, and the load rule of the metrics that name one.

Every run records, per brick of its cell, whether the agent used it (`agentab.synthesis.
usage`), kept in measures.json as `builtin.bricks_used[<name>]`; a scenario scores that as a
boolean metric by writing `bricks_used.<name>` in `[validation] metrics`. The name is the one a
reader knows the brick by: a skill's or an agent's `name` in its front matter (else its folder
or file name), an extension's file or folder name without its suffix.
"""

from __future__ import annotations

from pathlib import Path

from agentab.errors import AgentabError
from agentab.scenario.source import Collector

USED_METRIC = "bricks_used."  # + a brick's name: the boolean metric of its use


def brick_name(kind: str, path: Path) -> str:
    """The name a brick's use is measured under."""
    from agentab.harnesses.base import front_matter_name  # late: synthesize needs no adapter

    path = Path(path)
    if kind == "skills":
        return front_matter_name(path / "SKILL.md") or path.name
    if kind == "agents":
        return front_matter_name(path) or path.stem
    return path.name if path.is_dir() else path.stem


def check_usage_metrics(metrics: list[str], cells, sink: Collector) -> None:
    """A contract metric `bricks_used.<name>` names a brick of some cell whose use its harness
    shows: a misspelt name would make every run invalid, and a context file's use is never
    observable (it is in the prompt from the first turn)."""
    wanted = [metric for metric in metrics if metric.startswith(USED_METRIC)]
    if not wanted:
        return
    from agentab.harnesses import get_harness  # late: synthesize needs no adapter

    names: dict[str, list[str]] = {}  # name -> why its use is not observable, per cell
    twice: dict[str, str] = {}  # name -> a cell with two bricks of that name
    for cell in cells:
        try:
            harness = get_harness(cell.agent.harness)
        except AgentabError:
            continue  # an unknown harness: its own rule says so
        in_cell = [brick_name(brick.kind, brick.path) for brick in cell.bricks]
        twice.update((name, cell.name) for name in in_cell if in_cell.count(name) > 1)
        for brick, name in zip(cell.bricks, in_cell, strict=True):
            why = harness.unobservable_use.get(brick.kind)
            names.setdefault(name, []).append(why or "")
    for metric in wanted:
        name = metric.removeprefix(USED_METRIC)
        if name not in names:
            known = (
                ", ".join(f"{USED_METRIC}{n}" for n in sorted(names)) or "none: no cell has a brick"
            )
            sink.add(
                "validation.metrics",
                f"`{metric}` names no brick of this scenario's cells",
                f"write one of: {known}",
            )
        elif name in twice:
            sink.add(
                "validation.metrics",
                f"`{metric}`: cell `{twice[name]}` has two bricks named `{name}`, whose uses "
                "one metric cannot tell apart",
                "rename one (its front matter's `name`, or its file or folder)",
            )
        elif all(names[name]):
            sink.add(
                "validation.metrics",
                f"`{metric}`: the use of `{name}` cannot be observed: {names[name][0]}",
                f"remove `{metric}`; its delivery is in every run's receipt",
            )
