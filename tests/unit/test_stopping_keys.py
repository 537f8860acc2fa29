"""`[protocol] stopping`, `wave` and `decide`: what loads, and what is refused with file, key and
fix (docs/scenario.md#stopping)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentab.errors import ScenarioError
from agentab.scenario import load_scenario

DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder, symlinks=True)
    return folder


def with_protocol(folder: Path, lines: str) -> Path:
    path = folder / "scenario.toml"
    text = path.read_text()
    path.write_text(text.replace("repetitions = 10\n", lines, 1))
    return path


def refusal(path: Path) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path, check_etalon=False)
    return caught.value.render()


def test_a_scenario_without_stopping_is_fixed(demo: Path) -> None:
    scenario = load_scenario(demo / "scenario.toml", check_etalon=False)
    assert (scenario.stopping, scenario.sequential, scenario.waves) == ("fixed", False, 1)


def test_a_sequential_scenario_has_waves_and_decides_on_its_metrics(demo: Path) -> None:
    path = with_protocol(
        demo, 'repetitions = 30\nstopping = "sequential"\nwave = 5\ndecide = ["ran_tests"]\n'
    )
    scenario = load_scenario(path, check_etalon=False)
    assert (scenario.sequential, scenario.wave, scenario.waves) == (True, 5, 6)
    assert scenario.decide == ["ran_tests"]


@pytest.mark.parametrize(
    ("lines", "key", "fix"),
    [
        ('repetitions = 30\nstopping = "sequential"\n', "protocol.wave", "add wave = 5"),
        (
            'repetitions = 32\nstopping = "sequential"\nwave = 5\n',
            "protocol.repetitions",
            "write repetitions = 35 or 30",
        ),
        ("repetitions = 30\nwave = 5\n", "protocol.wave", 'add stopping = "sequential"'),
        (
            'repetitions = 30\nstopping = "sequential"\nwave = 5\ndecide = ["ran_test"]\n',
            "protocol.decide",
            "did you mean `ran_tests`?",
        ),
        ('repetitions = 30\nstopping = "early"\n', "protocol.stopping", 'stopping = "fixed"'),
        ('repetitions = 30\nstopping = "sequential"\nwave = 0\n', "protocol.wave", "wave = 5"),
    ],
)
def test_stopping_keys_that_disagree_are_refused_with_key_and_fix(
    demo: Path, lines: str, key: str, fix: str
) -> None:
    text = refusal(with_protocol(demo, lines))
    assert "scenario.toml" in text and key in text and fix in text, text


def test_check_tells_the_sequential_rule_and_warns_of_a_maximum_too_small(demo, capsys) -> None:
    from agentab.cli import main

    path = with_protocol(demo, 'repetitions = 30\nstopping = "sequential"\nwave = 5\n')
    main(["check", str(path)])
    out = capsys.readouterr().out
    assert "= 120 at most: sequential stopping, waves of 5 (6 at most)" in out
    assert "anytime-valid 95% confidence sequence" in out and "too few" not in out
    path.write_text(path.read_text().replace("repetitions = 30", "repetitions = 5", 1))
    main(["check", str(path)])
    out = capsys.readouterr().out
    assert "at most 5 pairs of runs, too few for a confidence sequence to exclude 0" in out
