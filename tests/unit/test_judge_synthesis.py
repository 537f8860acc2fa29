"""The judge against people in the synthesis: κ, the corrected rates and their verdicts, against
values computed by hand and by an independent resampling of the runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agentab import stats
from agentab.synthesis.judge_agreement import judge_agreements
from agentab.synthesis.runs.results import load_frozen_scenario
from agentab.synthesis.synthesize import synthesize

SCENARIO = """\
[scenario]
name = "judged"

{tasks}

[etalon]
repo = "calc.bundle"
tag = "v1.0"

[agent]
harness = "pi"
version = "1.6.0"
provider = "offline"
model = "demo"
thinking = "off"
timeout = "2m"

[protocol]
repetitions = {repetitions}
limits = {{ memory = "2G", processes = 256, disk = "1G", patch = "1M" }}

[axes]
context = ["nothing", "rule"]

[deltas.context.rule]
context_files = ["bricks/run-tests.md"]

[validation]
metrics = ["on_task"]

[validators.on_task]
mode = "judge"
model = "offline:demo"
rubric_file = "rubrics/on_task.md"
schema_file = "rubrics/on_task.schema.json"

[validators.people]
mode = "form"
fills = ["on_task_person"]
calibrates = "on_task"
sample = {sample}
"""

T, F = True, False


ONE_TASK = '[task]\nprompt = "Fix mean in calc.py."'
TWO_TASKS = '[tasks.easy]\nprompt = "Fix mean."\n\n[tasks.hard]\nprompt = "Add median."'


def write_folder(folder: Path, repetitions: int = 20, sample: int = 21, tasks=ONE_TASK) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = SCENARIO.format(repetitions=repetitions, sample=sample, tasks=tasks)
    (folder / "scenario.toml").write_text(text, encoding="utf-8")
    return folder


def write_run(folder: Path, cell: str, rep: int, judge: bool, person: bool | None, task=""):
    slug = f"{cell}--{task}" if task else cell
    run_dir = folder / "runs" / slug / f"r{rep:02d}"
    run_dir.mkdir(parents=True, exist_ok=True)
    measures = {
        "schema": 1,
        "scenario": "judged",
        "cell": cell,
        "rep": rep,
        "run": f"{slug}/r{rep:02d}",
        **({"task": task} if task else {}),
        "status": "valid",
        "metrics": {"on_task": judge},
        "extra": {} if person is None else {"on_task_person": person},
        "provenance": {"provider": "offline"},
        "builtin": {"input_tokens": 900, "output_tokens": 100, "cost_usd": 0.0},
    }
    (run_dir / "measures.json").write_text(json.dumps(measures), encoding="utf-8")


def labels(first: int, answers: list[bool]) -> dict[int, bool]:
    """The person's answers to the runs r<first>, r<first + 1>, …"""
    return {first + i: answer for i, answer in enumerate(answers)}


def fill(folder: Path, cell: str, judge: list[bool], labels: dict[int, bool], task="") -> None:
    """Runs r01.. with the judge's answers; `labels` maps a repetition to the person's."""
    for rep, answer in enumerate(judge, start=1):
        write_run(folder, cell, rep, answer, labels.get(rep), task)


def by_hand_folder(tmp_path: Path) -> Path:
    """nothing: the judge says true to 10 of 20; 10 labelled, one disagreement each way.
    rule: the judge says true to 18 of 20; 11 labelled, of which the person calls 3 of the
    judge's trues false."""
    folder = write_folder(tmp_path / "results" / "judged")
    nothing = labels(1, [T, T, T, T, F]) | labels(11, [F, F, F, F, T])
    fill(folder, "nothing", [T] * 10 + [F] * 10, nothing)
    rule = labels(1, [T] * 6 + [F] * 3) | {19: F, 20: F}
    fill(folder, "rule", [T] * 18 + [F] * 2, rule)
    return folder


def agreement_of(folder: Path):
    result = synthesize(folder)
    [found] = judge_agreements(result, load_frozen_scenario(folder))
    return found


def test_kappa_and_the_confusion_table_as_computed_by_hand(tmp_path):
    found = agreement_of(by_hand_folder(tmp_path))
    table = found.table
    # person true & judge true: 4 + 6; person only: 1; judge only: 1 + 3; both false: 4 + 2.
    assert (table.both_true, table.person_only, table.judge_only, table.both_false) == (10, 1, 4, 6)
    # p_o = 16/21; person true 11, judge true 14: p_e = (11·14 + 10·7) / 21² = 224/441;
    # κ = (336 − 224) / (441 − 224) = 112/217.
    assert found.kappa == pytest.approx(112 / 217, abs=1e-12)
    low, high = found.kappa_interval
    assert low < 112 / 217 < high


def test_the_corrected_rates_as_computed_by_hand(tmp_path):
    found = agreement_of(by_hand_folder(tmp_path))
    nothing, rule = found.rates
    assert (nothing.cell, nothing.judged, nothing.labelled) == ("nothing", 20, 10)
    assert nothing.judge_rate == pytest.approx(0.5)
    assert nothing.value == pytest.approx(0.5)  # −1 and +1 cancel
    assert (rule.judged, rule.labelled) == (20, 11)
    assert rule.judge_rate == pytest.approx(0.9)
    assert rule.value == pytest.approx(0.9 - 3 / 11, abs=1e-12)
    assert nothing.low < nothing.value < nothing.high


def independent_corrected_draws(judge, labelled, rng, draws=stats.DRAWS) -> np.ndarray:
    """Corrected rates of runs resampled by index: the judge's answers and the labelled pairs."""
    judge = np.asarray(judge, dtype=float)
    differences = np.asarray([int(p) - int(j) for p, j in labelled], dtype=float)
    picks = rng.integers(0, judge.size, size=(draws, judge.size))
    chosen = rng.integers(0, differences.size, size=(draws, differences.size))
    return judge[picks].mean(axis=1) + differences[chosen].mean(axis=1)


def test_the_corrected_gap_and_its_verdict_as_an_independent_resampling_gives(tmp_path):
    folder = by_hand_folder(tmp_path)
    [gap] = agreement_of(folder).gaps
    assert gap.value_cell - gap.value_ref == pytest.approx(0.4 - 3 / 11, abs=1e-12)
    rng = np.random.default_rng(3)
    nothing_pairs = [(T, T)] * 4 + [(F, T), (F, F)] * 1 + [(F, F)] * 3 + [(T, F)]
    rule_pairs = [(T, T)] * 6 + [(F, T)] * 3 + [(F, F)] * 2
    draws = independent_corrected_draws([T] * 18 + [F] * 2, rule_pairs, rng) - (
        independent_corrected_draws([T] * 10 + [F] * 10, nothing_pairs, rng)
    )
    low, high = np.percentile(draws, [2.5, 97.5])
    assert gap.verdict.ci_low == pytest.approx(low, abs=0.02)
    assert gap.verdict.ci_high == pytest.approx(high, abs=0.02)
    # The judge's own gap, +40 pp from 20 runs each, is established; corrected by the labels
    # (the person finds the judge lenient in `rule`), +12.7 pp with an interval across 0 is not.
    assert gap.judge_gap.verdict.is_established
    assert low < 0 < high and not gap.verdict.is_established and gap.note == ""


def test_a_clear_corrected_gap_is_established_and_the_synthesis_says_so(tmp_path):
    folder = write_folder(tmp_path / "results" / "judged", sample=20)
    fill(folder, "nothing", [T] * 2 + [F] * 18, labels(1, [T, F] + [F] * 8))
    fill(folder, "rule", [T] * 19 + [F], labels(10, [T] * 9 + [F]) | {20: F})
    [gap] = agreement_of(folder).gaps
    assert gap.verdict.is_established and gap.verdict.ci_low > 0.5
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    section = text.split("## The judge against people: `on_task`", 1)[1].split("\n## ", 1)[0]
    assert "| rule | +85 pp (established) | +85.9 pp | [+56.8, +100] pp |" in section
    assert "| **established** |" in section
    # 10% by the judge; the person calls one of its two trues false: 10% − 1/10.
    assert "| nothing (reference) | 20 | 10% | 10 | 0% | [0%, 20%] |" in section


def test_fewer_labels_than_the_minimum_never_establish_a_corrected_gap(tmp_path):
    folder = write_folder(tmp_path / "results" / "judged", sample=10)
    fill(folder, "nothing", [F] * 20, labels(1, [F] * 5))
    fill(folder, "rule", [T] * 20, labels(1, [T] * 5))
    [gap] = agreement_of(folder).gaps
    # Every draw is +100 pp: the interval alone would establish it.
    assert gap.verdict.ci_low == gap.verdict.ci_high == pytest.approx(1.0)
    assert not gap.verdict.is_established
    assert gap.verdict_text == "inconclusive: fewer than 9 labelled runs per cell (5 in the fewer)"


def test_before_the_form_is_filled_the_synthesis_says_what_to_do(tmp_path):
    folder = write_folder(tmp_path / "results" / "judged")
    fill(folder, "nothing", [T] * 20, {})
    fill(folder, "rule", [T] * 20, {})
    found = agreement_of(folder)
    assert found.table.n == 0 and found.kappa is None and found.gaps == []
    assert [rate.note for rate in found.rates] == ["no labelled run yet"] * 2
    text = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "No labelled run yet: copy `forms/people.blank.toml` to `forms/people.toml`" in text


def test_with_tasks_each_task_is_corrected_on_its_own_and_every_task_needs_labels(tmp_path):
    folder = write_folder(tmp_path / "results" / "judged", repetitions=4, tasks=TWO_TASKS)
    # nothing, easy: judge 4/4, the person calls 1 of 2 false: 1 − 1/2; hard: judge 0/4, the
    # person agrees on 2: 0. The cell's value: (0.5 + 0) / 2.
    fill(folder, "nothing", [T] * 4, {1: T, 2: F}, task="easy")
    fill(folder, "nothing", [F] * 4, {1: F, 2: F}, task="hard")
    # rule: labels on the easy task only: no corrected value.
    fill(folder, "rule", [T] * 4, {1: T, 2: T}, task="easy")
    fill(folder, "rule", [T] * 4, {}, task="hard")
    nothing, rule = agreement_of(folder).rates
    assert nothing.judge_rate == pytest.approx(0.5)
    assert nothing.value == pytest.approx(0.25)
    assert (rule.value, rule.note) == (None, "a task has no labelled run")
