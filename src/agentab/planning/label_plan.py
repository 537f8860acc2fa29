"""How many labels a form that checks a judge needs: `agentab plan --label-width W`.

A cell's corrected rate (`judge_agreement`) has a 95% interval of about

    ± z √(s / N + v / n)

with N the cell's valid runs, s the spread of the judge's answers over them (f(1 − f) for a
judge rate f; with several tasks, its mean over the tasks), n the labelled runs and v the
variance of (person − judge). For an interval at most W wide, n = z² v / ((W/2)² − z² s / N);
when z² s / N alone passes (W/2)², no number of labels is enough: the cell needs more runs
first, N ≥ z² s / (W/2)². The form deals its sample evenly over the cells, so the sample that
gives every cell its labels is the largest cell's need times the number of cells.

v comes from the labels already filled (over every cell), or, before any, from an assumed share
D of runs where the person and the judge differ: then v ≤ D, an answer on the safe side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from agentab import stats
from agentab.errors import AgentabError, problem
from agentab.metrics import Z_95
from agentab.synthesis.judge_agreement import labelled_groups
from agentab.synthesis.runs.results import load_frozen_scenario, read_runs

DEFAULT_DISAGREEMENT = 0.2
# Below this many labels, their variance says too little: the assumed disagreement is used.
FEWEST_LABELS_FOR_V = 10


@dataclass(frozen=True)
class LabelNeed:
    cell: str
    judged: int  # N: the cell's valid runs with the judge's answer
    judge_rate: float | None
    labels: int | None  # None: no number of labels is enough with N runs
    runs_first: int = 0  # the runs the cell needs first, when no number of labels is enough


@dataclass(frozen=True)
class LabelPlan:
    form: str
    judge_metric: str
    width: float
    variance: float  # v
    variance_source: str
    needs: list[LabelNeed]

    @property
    def sample(self) -> int | None:
        """The form's `sample` that gives every cell its labels (dealt evenly)."""
        found = [need.labels for need in self.needs]
        if not found or None in found:
            return None
        return max(found) * len(found)


def label_plans(
    results_dir: Path, width: float, disagreement: float = DEFAULT_DISAGREEMENT
) -> list[LabelPlan]:
    """One plan per form of the results folder's scenario that checks a judge."""
    for name, value, fix in (
        ("--label-width", width, "a proportion such as 0.2 (20 pp, ±10 pp)"),
        ("--disagreement", disagreement, "a share such as 0.2"),
    ):
        if not 0 < value <= 1:
            raise AgentabError(problem(name, "", f"{value} is not in (0, 1]", f"pass {fix}"))
    scenario = load_frozen_scenario(results_dir)
    runs, _ = read_runs(results_dir, scenario)
    forms = {
        name: spec
        for name, spec in scenario.validators.items()
        if spec.mode == "form" and spec.options.get("calibrates")
    }
    if not forms:
        raise AgentabError(
            problem(
                Path(results_dir) / "scenario.toml",
                "validators",
                "no form checks a judge, so there is no label to plan",
                'declare a form with calibrates = "<judge metric>" and sample = N '
                "(docs/validators.md)",
            )
        )
    tasks = [task.name for task in scenario.tasks] if len(scenario.tasks) > 1 else [None]
    plans = []
    for name, spec in forms.items():
        judged, person = spec.options["calibrates"], spec.options["fills"][0]
        groups = labelled_groups(runs, judged, person)
        variance, source = label_variance(groups, disagreement)
        needs = [cell_need(groups, cell.name, tasks, width, variance) for cell in scenario.cells]
        plans.append(LabelPlan(name, judged, width, variance, source, needs))
    return plans


def label_variance(groups, disagreement: float) -> tuple[float, str]:
    differences = [int(p) - int(j) for _, pairs in groups.values() for p, j in pairs]
    if len(differences) < FEWEST_LABELS_FOR_V:
        return disagreement, (
            f"an assumed disagreement of {disagreement:.0%} (--disagreement; "
            f"{len(differences)} labels filled so far, fewer than {FEWEST_LABELS_FOR_V})"
        )
    mean = sum(differences) / len(differences)
    variance = sum((d - mean) ** 2 for d in differences) / len(differences)
    return variance, f"the {len(differences)} labels filled so far"


def cell_need(groups, cell: str, tasks: list, width: float, variance: float) -> LabelNeed:
    answers = [
        [a for (c, t), (judge, _) in groups.items() if c == cell and (task is None or t == task)
         for a in judge]
        for task in tasks
    ]  # fmt: skip
    judged = sum(len(found) for found in answers)
    if any(not found for found in answers):
        return LabelNeed(cell, judged, None, None)
    rates = [sum(found) / len(found) for found in answers]
    spread = sum(rate * (1 - rate) for rate in rates) / len(rates)
    room = (width / 2) ** 2 - Z_95**2 * spread / judged
    if room <= 0:
        first = math.floor(Z_95**2 * spread / (width / 2) ** 2) + 1  # N must pass it
        return LabelNeed(cell, judged, sum(rates) / len(rates), None, runs_first=first)
    labels = max(1, math.ceil(Z_95**2 * variance / room))
    return LabelNeed(cell, judged, sum(rates) / len(rates), labels)


def render_label_plans(plans: list[LabelPlan]) -> str:
    lines = []
    for plan in plans:
        half = 50 * plan.width
        lines += [
            f"labels for a 95% interval at most {100 * plan.width:.3g} pp wide (±{half:.3g} pp) "
            f"of each cell's corrected {plan.judge_metric} rate (form `{plan.form}`)",
            "",
        ]
        table = [("cell", "judged runs", "judge rate", "labels")]
        for need in plan.needs:
            rate = "-" if need.judge_rate is None else f"{need.judge_rate:.0%}"
            if need.labels is not None and need.labels > need.judged:
                labels = f"{need.labels}: more than its runs, run more first"
            elif need.labels is not None:
                labels = str(need.labels)
            elif need.runs_first:
                labels = f"none: it needs over {need.runs_first - 1} runs first"
            else:
                labels = "no judged run"
            table.append((need.cell, str(need.judged), rate, labels))
        widths = [max(len(row[i]) for row in table) for i in range(4)]
        lines += [
            "  ".join(t.ljust(w) for t, w in zip(row, widths, strict=True)).rstrip()
            for row in table
        ]
        lines.append("")
        if plan.sample is not None:
            lines.append(
                f"sample = {plan.sample}: the form deals its sample evenly over the "
                f"{len(plan.needs)} cells, so each gets the most any cell needs"
                + (
                    f" (a corrected gap also needs at least {stats.MIN_RUNS_PER_GROUP} labels "
                    "per cell to be established)"
                    if plan.sample < stats.MIN_RUNS_PER_GROUP * len(plan.needs)
                    else ""
                )
                + "."
            )
        else:
            lines.append(
                "no sample gives every cell such an interval: a cell's judge rate alone is "
                "already wider with the runs it has; run more repetitions first."
            )
        lines.append(f"var(person − judge) = {plan.variance:.3g}, from {plan.variance_source}.")
        lines.append("")
    return "\n".join(lines).rstrip()
