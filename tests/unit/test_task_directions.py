"""Tasks whose gap points against the pooled one: named in one line of the synthesis, marked on
the cell page, the cell's per-task gaps sorted."""

from __future__ import annotations

import html
import re

from agentab import stats
from agentab.metrics import MEDIAN, RATE
from agentab.synthesis.synthesize import synthesize
from agentab.synthesis.task_directions import against_line, sorted_task_gaps, tasks_against
from agentab.synthesis.verdicts import Gap
from tests.unit.test_tasks_synthesis import write_folder, write_run


def gap(cell: str, metric: str, value: float, task: str = "all", kind: str = RATE) -> Gap:
    verdict = stats.GapVerdict(value, value - 0.1, value + 0.1, 0.5, stats.INCONCLUSIVE)
    return Gap(cell, "nothing", metric, kind, 5, 5, 0.5 + value, 0.5, verdict, None, task=task)


GAPS = [
    gap("rule", "ran_tests", 0.2),
    gap("rule", "turns", -1.0, kind=MEDIAN),
    gap("rule", "ran_tests", 0.8, "easy"),
    gap("rule", "ran_tests", -0.4, "hard"),
    gap("rule", "ran_tests", 0.0, "flat"),  # points nowhere
    gap("rule", "turns", 2.0, "easy", MEDIAN),
    gap("rule", "turns", -4.0, "hard", MEDIAN),
]


def test_a_task_against_its_pooled_gap_has_the_opposite_sign():
    found = tasks_against(GAPS)
    assert [(item.task_gap.task, item.task_gap.metric) for item in found] == [
        ("hard", "ran_tests"),
        ("easy", "turns"),
    ]
    assert against_line(GAPS) == (
        "**2 task gaps point against the pooled gap** (descriptive): `rule`: `hard` on "
        "`ran_tests`: -40 pp (pooled +20 pp), `easy` on `turns`: +2 (pooled -1)."
    )
    assert against_line(GAPS[:3]) == ""


def test_the_tasks_are_sorted_from_the_pooled_gaps_way_to_against_it():
    ordered = sorted_task_gaps(GAPS, ["ran_tests", "turns"])
    assert [(g.metric, g.task) for g in ordered] == [
        ("ran_tests", "easy"),
        ("ran_tests", "flat"),
        ("ran_tests", "hard"),
        ("turns", "hard"),  # the pooled gap is −1: −4 goes furthest its way
        ("turns", "easy"),
    ]


# rule runs the tests on the easy task 5/5 against 1/5, on the hard one 0/5 against 2/5: the
# pooled gap is (+80 − 40) / 2 = +20 pp, and the hard task points against it.
RAN = {
    ("nothing", "easy"): [True, False, False, False, False],
    ("nothing", "hard"): [True, True, False, False, False],
    ("rule", "easy"): [True] * 5,
    ("rule", "hard"): [False] * 5,
}


def two_task_folder(tmp_path):
    folder = write_folder(tmp_path / "results")
    for (cell, task), answers in RAN.items():
        for rep, ran in enumerate(answers, start=1):
            write_run(folder, cell, task, rep, {"ran_tests": ran, "turns": 6})
    return folder


def test_the_synthesis_names_them_in_one_line(tmp_path):
    folder = two_task_folder(tmp_path)
    synthesize(folder)
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if "against the pooled gap**" in line]
    assert lines == [
        "**1 task gap points against the pooled gap** (descriptive): `rule`: `hard` on "
        "`ran_tests`: -40 pp (pooled +20 pp)."
    ]


def test_the_cell_page_sorts_the_per_task_gaps_and_marks_those_against(tmp_path):
    from agentab.report import build_report

    folder = two_task_folder(tmp_path)
    synthesize(folder)
    built = build_report(folder)
    page = html.unescape((built.report_dir / "cells" / "rule.html").read_text(encoding="utf-8"))
    section = page.split("Gaps per task, sorted against the pooled gap</h3>", 1)[1]
    section = section.split("</table>", 1)[0]
    rows = re.findall(r"<tr( class=\"against\")?>(.*?)</tr>", section)
    cells = [
        (
            bool(marked),
            [re.sub(r"<[^>]+>", "", td) for td in re.findall(r"<td[^>]*>(.*?)</td>", row)],
        )
        for marked, row in rows
        if "<td" in row
    ]
    # metric, task, cell value, reference value, gap, interval, pooled gap, mark; turns: 0 in
    # both tasks, no pooled direction.
    assert [(marked, row[0], row[1], row[4], row[6], row[7]) for marked, row in cells] == [
        (False, "ran_tests", "easy", "+80 pp", "+20 pp", ""),
        (True, "ran_tests", "hard", "-40 pp", "+20 pp", "▼ against"),
        (False, "turns", "easy", "0", "0", ""),
        (False, "turns", "hard", "0", "0", ""),
    ]
    reference = (built.report_dir / "cells" / "nothing.html").read_text(encoding="utf-8")
    assert "sorted against the pooled gap" not in reference
