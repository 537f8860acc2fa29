"""A form that checks a judge against people: its load rules, the seeded sample it lists (spread
over the cells, kept when written again), the question it asks, and its answers."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from agentab.cli import main
from agentab.errors import AgentabError
from agentab.layout import ResultsFolder
from agentab.scenario import load_scenario
from agentab.validators.calibrating import calibration_sample, spread
from agentab.validators.form import read_form_answers
from agentab.validators.form_blank import write_blank_form

DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo"
FORM = "people"
SEED = 7


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder, symlinks=True)
    return folder


def edit(folder: Path, old: str, new: str) -> None:
    text = (folder / "scenario.toml").read_text()
    assert old in text, old
    (folder / "scenario.toml").write_text(text.replace(old, new, 1))


def refusal(folder: Path, capsys) -> str:
    code = main(["check", "--no-etalon", str(folder / "scenario.toml")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err


CASES = {
    "sample of 0": (
        ("sample = 36", "sample = 0"),
        ("[validators.people.sample]", "less than the minimum of 1", "sample is an integer ≥ 1"),
    ),
    "sample that is not a number": (
        ("sample = 36", 'sample = "many"'),
        ("[validators.people.sample]", "sample is an integer ≥ 1"),
    ),
    "calibrates a metric no judge declares": (
        ('calibrates = "on_task"', 'calibrates = "tests_pass"'),
        ("[validators.people.calibrates]", "not a metric of any judge", "`on_task`"),
    ),
    "calibrates a metric outside the contract": (
        ('calibrates = "on_task"', 'calibrates = "elsewhere"'),
        ("[validators.people.calibrates]", "not in the metric contract", "add `elsewhere`"),
    ),
    "calibrates without a sample": (
        ("sample = 36\n", ""),
        ("[validators.people.sample]", "needs `sample`", "add sample = N"),
    ),
    "a sample without calibrates": (
        ('calibrates = "on_task"\n', ""),
        ("[validators.people.sample]", "without `calibrates`", 'add calibrates = "'),
    ),
    "fills two metrics": (
        ('fills = ["on_task_person"]', 'fills = ["on_task_person", "other"]'),
        ("[validators.people.fills]", "fills one metric", 'fills = ["on_task_person"]'),
    ),
    "its metric in the contract": (
        ('"on_task", "readable"]', '"on_task", "readable", "on_task_person"]'),
        ("[validators.people.fills]", "a sample of runs only", "remove `on_task_person`"),
    ),
    "an unknown key": (
        ("sample = 36", "sample = 36\nsampel = 4"),
        ("[validators.people.sampel]", "unknown key"),
    ),
}


def test_the_demo_declares_a_calibrating_form_that_loads():
    scenario = load_scenario(DEMO / "scenario.toml", check_etalon=False)
    spec = scenario.validators[FORM]
    assert (spec.mode, spec.options["calibrates"], spec.options["sample"]) == (
        "form",
        "on_task",
        36,
    )
    assert "on_task_person" not in scenario.metrics


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_calibrating_form_is_refused_with_file_key_and_fix(demo, capsys, case):
    (old, new), words = CASES[case]
    edit(demo, old, new)
    err = refusal(demo, capsys)
    assert "scenario.toml" in err and "fix: " in err
    for word in words:
        assert word in err, f"{word!r} missing from:\n{err}"


def test_a_judge_metric_that_is_not_a_boolean_is_refused(demo, capsys):
    schema = demo / "rubrics" / "on_task.schema.json"
    schema.write_text(schema.read_text().replace('"type": "boolean"', '"type": "number"'))
    err = refusal(demo, capsys)
    assert "[validators.people.calibrates]" in err
    assert "answers `on_task` with a number" in err and '{"type": "boolean"}' in err


# --- the sample -----------------------------------------------------------------------------------


def test_the_labels_are_spread_over_the_run_cells_as_far_as_their_runs_go():
    assert spread(10, {"a": 5, "b": 5, "c": 5}, SEED) in (
        {"a": 4, "b": 3, "c": 3},
        {"a": 3, "b": 4, "c": 3},
        {"a": 3, "b": 3, "c": 4},
    )
    assert spread(10, {"a": 1, "b": 20}, SEED) == {"a": 1, "b": 9}
    assert spread(50, {"a": 2, "b": 3}, SEED) == {"a": 2, "b": 3}


def runs_of(cells: dict[str, int]) -> list[str]:
    return [f"{cell}/r{rep:02d}" for cell, count in cells.items() for rep in range(1, count + 1)]


def test_the_sample_is_seeded_even_and_a_random_subset_within_a_cell():
    eligible = runs_of({"nothing-off": 10, "rule-off": 10})
    first = calibration_sample({"seed": SEED, "runs": {}}, eligible, 6)
    assert first == calibration_sample({"seed": SEED, "runs": {}}, eligible, 6)
    assert Counter(run.split("/")[0] for run in first) == {"nothing-off": 3, "rule-off": 3}
    # Another seed draws other runs: the choice is not the first runs of each cell.
    other = calibration_sample({"seed": SEED + 1, "runs": {}}, eligible, 6)
    assert other != first
    chosen = Counter()
    for seed in range(400):
        chosen.update(calibration_sample({"seed": seed, "runs": {}}, eligible, 6))
    # Each run of a cell is drawn in 3 of its 10 runs' samples: 120 of 400, give or take.
    assert all(90 <= chosen[run] <= 150 for run in eligible), chosen


def test_a_run_once_listed_stays_listed_and_new_runs_only_top_the_sample_up():
    keys = {"seed": SEED, "runs": {}}
    before = calibration_sample(keys, runs_of({"a": 4, "b": 4}), 4)
    keys["runs"] = {f"id{i}": run for i, run in enumerate(before)}
    after = calibration_sample(keys, runs_of({"a": 10, "b": 10, "c": 10}), 9)
    assert set(before) <= set(after)
    assert Counter(run.split("/")[0] for run in after) == {"a": 3, "b": 3, "c": 3}


# --- the blank form -------------------------------------------------------------------------------


def write_run(results: Path, slug: str, rep: int) -> None:
    folder = results / "runs" / slug / f"r{rep:02d}"
    (folder / "validators").mkdir(parents=True)
    (folder / "result.patch").write_text(f"--- a/calc.py\n+++ b/calc.py\n+# {rep}\n")
    (folder / "run.json").write_text(json.dumps({"facts": {"final_message": "done"}}))
    (folder / "transcript.jsonl").write_text("")
    judge_inputs = [
        {"kind": "rubric", "rel": "rubrics/on_task.md", "sha256": "a" * 64},
        {"kind": "schema", "rel": "rubrics/on_task.schema.json", "sha256": "b" * 64},
    ]
    for name, metrics in {
        "tests": {"tests_pass": True},
        "behaviour": {"ran_tests": True, "turns": 4},
        "scope": {"scope_clean": True},
        "on_task": {"on_task": rep % 2 == 0},
    }.items():
        output = {"validator": name, "ok": True, "metrics": metrics, "reasons": {}}
        if name == "on_task":
            output["inputs"] = judge_inputs
        (folder / "validators" / f"{name}.json").write_text(json.dumps(output))
    (folder / "measures.json").write_text(json.dumps({"status": "valid"}))


@pytest.fixture
def results(tmp_path: Path) -> Path:
    results = tmp_path / "results" / "demo"
    scenario = load_scenario(DEMO / "scenario.toml", check_etalon=False)
    for cell in scenario.cells:
        for rep in range(1, 11):
            write_run(results, cell.slug, rep)
    frozen = results / "inputs"
    (frozen / ("a" * 16)).mkdir(parents=True)
    (frozen / ("a" * 16) / "on_task.md").write_text((DEMO / "rubrics" / "on_task.md").read_text())
    (frozen / ("b" * 16)).mkdir(parents=True)
    schema = DEMO / "rubrics" / "on_task.schema.json"
    (frozen / ("b" * 16) / "on_task.schema.json").write_text(schema.read_text())
    return results


@pytest.fixture
def scenario():
    return load_scenario(DEMO / "scenario.toml", check_etalon=False)


def test_the_blank_lists_its_sample_with_the_judges_question_and_never_its_answers(
    results, scenario
):
    blank = write_blank_form(results, scenario, FORM, seed=SEED)
    text = blank.read_text()
    ids = [line.split('"')[1] for line in text.splitlines() if line.startswith("[runs.")]
    assert len(ids) == 36
    keys = json.loads(ResultsFolder(results).form_keys(FORM).read_text())["runs"]
    assert Counter(keys[i].split("/")[0] for i in ids) == {cell.slug: 9 for cell in scenario.cells}
    assert "# on_task_person = " in text
    assert "it lists 36 runs drawn with a seed" in text
    assert "people.material/question.md" in text
    question = (ResultsFolder(results).form_material(FORM) / "question.md").read_text()
    assert "as the judge answers `on_task`: The change addresses the task." in question
    assert (DEMO / "rubrics" / "on_task.md").read_text().strip() in question
    # Blind to the judge as to the cell: nothing the person gets holds its answers.
    for path in ResultsFolder(results).forms.rglob("*"):
        if path.is_file():
            body = path.read_text()
            assert "offline model verdict" not in body and '"on_task": true' not in body
            assert not any(cell.slug in body for cell in scenario.cells)


def fill(results: Path, answers: dict[str, object]) -> None:
    keys = json.loads(ResultsFolder(results).form_keys(FORM).read_text())["runs"]
    ids = sorted(keys)
    lines = []
    for form_id, value in zip(ids, answers.values(), strict=False):
        lines += [f'[runs."{form_id}"]', f"on_task_person = {value}", ""]
    ResultsFolder(results).filled_form(FORM).write_text("\n".join(lines))


def test_only_the_sample_is_pending_and_a_label_must_be_true_or_false(results, scenario):
    write_blank_form(results, scenario, FORM, seed=SEED)
    fill(results, {"a": "true", "b": "false"})
    answers = read_form_answers(results, scenario, FORM)
    assert len(answers.answers) == 2
    assert len(answers.pending) == 34  # the rest of the sample, not every run of the results
    fill(results, {"a": '"yes"', "b": '"no"'})  # answered alike, but not true or false
    with pytest.raises(AgentabError) as error:
        read_form_answers(results, scenario, FORM)
    text = str(error.value)
    assert "people.toml" in text and "is not true or false" in text
    assert "write on_task_person = true or on_task_person = false" in text


def test_a_label_on_a_run_outside_the_sample_is_refused(results, scenario):
    """The corrected rate is unbiased only when the labelled runs are the seeded sample: a label
    slipped in for another run (its id taken from the other form, or made up) must not count."""
    write_blank_form(results, scenario, FORM, seed=SEED)
    keys = json.loads(ResultsFolder(results).form_keys(FORM).read_text())["runs"]
    outside = "0" * 8
    assert outside not in keys
    ResultsFolder(results).filled_form(FORM).write_text(
        f'[runs."{outside}"]\non_task_person = true\n'
    )
    with pytest.raises(AgentabError) as error:
        read_form_answers(results, scenario, FORM)
    assert "people.toml" in str(error.value) and outside in str(error.value)
