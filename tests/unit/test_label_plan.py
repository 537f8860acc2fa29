"""`agentab plan --label-width`: the labels a corrected rate's interval needs, by hand and against
the width the resampled interval really has."""

from __future__ import annotations

import numpy as np
import pytest

from agentab.cli import main
from agentab.planning.label_plan import label_plans
from agentab.synthesis.judge_agreement import ppi_draws
from tests.unit.test_judge_synthesis import by_hand_folder, fill, write_folder

T, F = True, False


def test_the_labels_as_computed_by_hand(tmp_path):
    [plan] = label_plans(by_hand_folder(tmp_path), 0.5)
    # The 21 labels differ by −1 four times and +1 once: mean −1/7, variance 5/21 − 1/49.
    assert plan.variance == pytest.approx(32 / 147)
    assert plan.variance_source == "the 21 labels filled so far"
    nothing, rule = plan.needs
    # rule: f = 0.9 over N = 20; room = 0.25² − 1.96² · 0.09 / 20; n = 1.96² v / room = 18.5.
    assert (rule.judged, rule.judge_rate, rule.labels) == (20, pytest.approx(0.9), 19)
    # nothing: f = 0.5: room = 0.0625 − 1.96² · 0.25 / 20 = 0.0145; n = 57.7.
    assert nothing.labels == 58
    assert plan.sample == 116


def test_no_number_of_labels_is_enough_when_the_judges_own_spread_is_wider(tmp_path):
    [plan] = label_plans(by_hand_folder(tmp_path), 0.2)
    nothing, _ = plan.needs
    # ±10 pp needs 1.96² · 0.25 / 0.01 = 96.04 runs: over 96.
    assert (nothing.labels, nothing.runs_first) == (None, 97)
    assert plan.sample is None


def test_before_any_label_the_assumed_disagreement_is_used(tmp_path):
    folder = write_folder(tmp_path / "results" / "judged", repetitions=200)
    fill(folder, "nothing", [T] * 100 + [F] * 100, {})
    fill(folder, "rule", [T] * 180 + [F] * 20, {})
    [plan] = label_plans(folder, 0.2, disagreement=0.1)
    assert plan.variance == 0.1
    assert "an assumed disagreement of 10%" in plan.variance_source
    # rule: room = 0.01 − 1.96² · 0.09 / 200 = 0.008271; n = 1.96² · 0.1 / room = 46.4.
    assert plan.needs[1].labels == 47


@pytest.mark.parametrize("f, judged, v", [(0.9, 200, 0.1), (0.5, 400, 0.2)])
def test_at_the_planned_labels_the_resampled_interval_has_the_width_asked(tmp_path, f, judged, v):
    """Judge answers and labelled differences with the variance v (a share v of the labels off
    by one, half each way): at n labels the interval is W wide, give or take the draws."""
    folder = write_folder(tmp_path / "results" / "judged", repetitions=judged)
    answers = [T] * int(f * judged) + [F] * (judged - int(f * judged))
    fill(folder, "nothing", answers, {})
    fill(folder, "rule", answers, {})
    [plan] = label_plans(folder, 0.2, disagreement=v)
    n = plan.needs[0].labels

    def width(labels: int) -> float:
        off = round(v * labels / 2)
        pairs = [(T, F)] * off + [(F, T)] * off + [(T, T)] * (labels - 2 * off)
        low, high = np.percentile(ppi_draws(answers, pairs, "width"), [2.5, 97.5])
        return high - low

    assert width(n) == pytest.approx(0.2, rel=0.06)
    assert width(n // 2) > 0.22


def test_the_command_prints_the_plan_and_refuses_a_width_out_of_range(tmp_path, capsys):
    folder = by_hand_folder(tmp_path)
    assert main(["plan", str(folder), "--label-width", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "labels for a 95% interval at most 50 pp wide (±25 pp)" in out
    assert "rule     20           90%         19" in out
    assert "sample = 116" in out
    assert main(["plan", str(folder), "--label-width", "2"]) == 2
    err = capsys.readouterr().err
    assert "--label-width" in err and "not in (0, 1]" in err and "fix: " in err
