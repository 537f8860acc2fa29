"""Tasks that point against the pooled gap: where a cell's average hides the tasks it made worse.

With several tasks, a pooled gap is the equal-weight mean of the tasks' gaps, and a mean gain can
hide tasks that lost (a published skill's average gain hid 16 of 84 tasks that got worse). A
task's gap points against the pooled one when the two have opposite signs; a task gap of 0, or
a pooled gap of 0, points nowhere. Like every per-task gap, this is descriptive: no verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentab.synthesis.verdicts import Gap
from agentab.synthesis.wording import signed


@dataclass(frozen=True)
class TaskAgainst:
    """A task whose gap points against its cell's pooled gap of the same metric."""

    task_gap: Gap
    pooled: Gap

    @property
    def cell(self) -> str:
        return self.task_gap.cell

    @property
    def text(self) -> str:
        """`hard` on `ran_tests`: −20 pp (pooled +30 pp)."""
        kind = self.task_gap.kind
        return (
            f"`{self.task_gap.task}` on `{self.task_gap.metric}`: "
            f"{signed(self.task_gap.verdict.gap, kind)} "
            f"(pooled {signed(self.pooled.verdict.gap, kind)})"
        )


def pooled_gaps(gaps: list[Gap]) -> dict[tuple[str, str], Gap]:
    return {(gap.cell, gap.metric): gap for gap in gaps if gap.pooled}


def points_against(task_gap: Gap, pooled: Gap | None) -> bool:
    return pooled is not None and task_gap.verdict.gap * pooled.verdict.gap < 0


def tasks_against(gaps: list[Gap]) -> list[TaskAgainst]:
    """Every per-task gap that points against its pooled gap, in the order of the gaps."""
    pooled = pooled_gaps(gaps)
    return [
        TaskAgainst(gap, pooled[gap.cell, gap.metric])
        for gap in gaps
        if not gap.pooled and points_against(gap, pooled.get((gap.cell, gap.metric)))
    ]


def against_line(gaps: list[Gap]) -> str:
    """The synthesis's one line naming them; "" when no task points against its pooled gap."""
    found = tasks_against(gaps)
    if not found:
        return ""
    by_cell: dict[str, list[str]] = {}
    for item in found:
        by_cell.setdefault(item.cell, []).append(item.text)
    named = "; ".join(f"`{cell}`: {', '.join(texts)}" for cell, texts in by_cell.items())
    count = len(found)
    return (
        f"**{count} task gap{'s' * (count != 1)} point{'s' * (count == 1)} against the pooled "
        f"gap** (descriptive): {named}."
    )


def sorted_task_gaps(gaps: list[Gap], metrics: list[str]) -> list[Gap]:
    """The per-task gaps by metric (in the contract's order), each metric's tasks from the one
    that goes furthest the pooled gap's way to the one that goes furthest against it."""
    pooled = pooled_gaps(gaps)

    def along_pooled(gap: Gap) -> float:
        found = pooled.get((gap.cell, gap.metric))
        direction = -1.0 if found is not None and found.verdict.gap < 0 else 1.0
        return direction * gap.verdict.gap

    order = {metric: index for index, metric in enumerate(metrics)}
    tasks = [gap for gap in gaps if not gap.pooled]
    return sorted(tasks, key=lambda gap: (order.get(gap.metric, len(order)), -along_pooled(gap)))


def marked_task_rows(context: dict, cell: str) -> list[dict]:
    """A cell's rows of the per-task gaps as the report writes them (`task_gaps` of the
    synthesis's context), sorted as `sorted_task_gaps` sorts them, each with its pooled gap and
    `against` when it points against it."""
    rows = {id(row["gap"]): row for row in context["task_gaps"] if row["gap"].cell == cell}
    pooled_rows = [row["gap"] for row in context["gaps"] + context["calibration"]]
    pooled = pooled_gaps(pooled_rows)
    metrics = [metric["name"] for metric in context["metrics"]]
    ordered = sorted_task_gaps(pooled_rows + [row["gap"] for row in rows.values()], metrics)
    marked = []
    for gap in ordered:
        found = pooled.get((gap.cell, gap.metric))
        marked.append(
            rows[id(gap)]
            | {
                "pooled": signed(found.verdict.gap, gap.kind) if found else "—",
                "against": points_against(gap, found),
            }
        )
    return marked
