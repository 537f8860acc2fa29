"""Tasks and the A/A copy of the reference: what turns cells into the runs of a scenario.

A scenario has one `[task]` or several `[tasks.<name>]`, never both. With several, each task
is a stratum: every cell runs every task, and a run is cell × task × repetition, kept in
`runs/<cell slug>--<task>/r<NN>/` (a cell's slug never holds `--`, so the folder name says
both). With one `[task]` nothing of this shows: a run stays in `runs/<cell slug>/r<NN>/`, so
a results folder made before tasks existed keeps its paths and its up-to-date runs.

`[protocol] aa = true` adds `<reference> (A/A)`: the reference cell once more, under its own
name and slug (so its own folders and its own offline seeds), identical in treatment. A gap
between two identical cells is a measure of the measurement: chance, or drift.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from agentab.layout import task_run_slug
from agentab.scenario.cells import TASK_KEYS, slugify
from agentab.scenario.rules import task_prompt
from agentab.scenario.source import Collector, quote_key
from agentab.scenario.types import Cell

TASK_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
LONGEST_TASK_NAME = 40
AA_SUFFIX = " (A/A)"


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    tag: str = ""  # its own etalon tag; "" for the scenario's
    # For a `mode = "tests"` validator alone: a folder of the scenario's laid over its checkout
    # (tests the agent never sees), and the test ids that must go from failing to passing and
    # those that must keep passing (a task mined from the repository's history has all three).
    hidden_tests: str = ""
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        shown = {"name": self.name, "tag": self.tag} if self.tag else {"name": self.name}
        if self.hidden_tests:
            shown["hidden_tests"] = self.hidden_tests
        if self.fail_to_pass or self.pass_to_pass:
            shown["fail_to_pass"] = list(self.fail_to_pass)
            shown["pass_to_pass"] = list(self.pass_to_pass)
        return shown


def read_tasks(data: dict, sc_dir: Path, sink: Collector, check: bool) -> tuple[str, list[Task]]:
    """(the prompt of a single [task], or ""; the [tasks.<name>], or [])."""
    if "task" in data and "tasks" in data:
        sink.add(
            "tasks",
            "the scenario has both [task] and [tasks.<name>]",
            "keep one: move the prompt of [task] into a [tasks.<name>] of its own, or remove "
            "the [tasks.*] tables",
        )
        return "", []
    if "tasks" not in data:
        owner = data.get("task")
        if owner is None:
            sink.add(
                "task",
                "the scenario has no task",
                'add [task] with prompt = "..." or prompt_file = "task.md", or several '
                "[tasks.<name>] tables",
            )
            return "", []
        prompt = task_prompt(owner, sc_dir, "task", sink, check)
        if prompt is None and not (set(TASK_KEYS) & set(owner)):
            sink.add(
                "task",
                "the task has no prompt",
                'add prompt = "..." or prompt_file = "task.md" to [task]',
            )
        return prompt or "", []
    tasks = []
    for name, owner in data["tasks"].items():
        key = f"tasks.{quote_key(name)}"
        if not TASK_NAME.fullmatch(name) or len(name) > LONGEST_TASK_NAME:
            sink.add(
                key,
                f"task name {name!r} cannot name a folder: its runs live in "
                "runs/<cell slug>--<task>/",
                f"use lower-case letters, digits and single '-' (at most {LONGEST_TASK_NAME} "
                f"characters), e.g. [tasks.{slugify(name)[:LONGEST_TASK_NAME] or 'first'}]",
            )
        prompt = task_prompt(owner, sc_dir, key, sink, check)
        if prompt is None and not (set(TASK_KEYS) & set(owner)):
            sink.add(key, f"task `{name}` has no prompt", f'add prompt = "..." to [{key}]')
        hidden = owner.get("hidden_tests", "")
        if hidden and check and not (sc_dir / hidden).is_dir():
            sink.add(
                f"{key}.hidden_tests",
                f"`{hidden}` is not a folder beside the scenario",
                "point hidden_tests at the folder of the task's hidden tests, laid out as the "
                "repository's paths (hidden/tests/test_x.py is laid at tests/test_x.py)",
            )
        tasks.append(
            Task(
                name=name,
                prompt=prompt or "",
                tag=owner.get("tag", ""),
                hidden_tests=hidden,
                fail_to_pass=tuple(owner.get("fail_to_pass", ())),
                pass_to_pass=tuple(owner.get("pass_to_pass", ())),
            )
        )
    return "", tasks


def check_deltas_leave_the_task(data: dict, sink: Collector) -> None:
    """With several tasks, the task is the stratum: a delta that set it would mix the two."""
    if "tasks" not in data:
        return
    for dimension, values in data.get("deltas", {}).items():
        for value, delta in values.items():
            for key in TASK_KEYS:
                if key in delta:
                    sink.add(
                        f"deltas.{dimension}.{quote_key(value)}.{key}",
                        f"delta `{dimension}.{value}` sets the task's {key}, but the scenario "
                        "has [tasks.<name>]: every cell runs every task",
                        "remove it from the delta, or make it a [tasks.<name>] of its own",
                    )


def aa_cell(cells: list[Cell], reference: str, sink: Collector) -> Cell | None:
    """`<reference> (A/A)`: the reference's treatment, under a name (and slug) of its own."""
    ref = next(cell for cell in cells if cell.name == reference)
    name = reference + AA_SUFFIX
    copy = replace(
        ref, name=name, slug=slugify(name), is_baseline=False, is_variant=False, is_aa=True
    )
    for cell in cells:
        if copy.slug in (cell.slug, slugify(cell.name)):
            sink.add(
                "protocol.aa",
                f"the A/A copy of the reference, `{name}`, would share its results folder "
                f"runs/{copy.slug}/ with the cell `{cell.name}`",
                f"rename the cell `{cell.name}`, or set aa = false",
            )
            return None
    return copy


def run_cells(cells: list[Cell], tasks: list[Task]) -> list[Cell]:
    """The cells as runs see them: with tasks, one per cell and task (its slug names its folder,
    its prompt and tag are the task's); without, the cells themselves."""
    if not tasks:
        return list(cells)
    return [
        replace(
            cell,
            slug=task_run_slug(cell.slug, task.name),
            prompt=task.prompt,
            task=task.name,
            tag=task.tag,
        )
        for cell in cells
        for task in tasks
    ]
