"""The blind form: written blank, shuffled with a seed, never overwritten, ingested strictly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentab.errors import AgentabError
from agentab.files import write_json
from agentab.layout import ResultsFolder
from agentab.scenario import load_scenario
from agentab.validators.form import form_fill_conflicts, form_spec_problems, read_form_answers
from agentab.validators.form_blank import _write_material, write_blank_form

DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo"
REPS = 3
SEED = 7


@pytest.fixture
def scenario():
    return load_scenario(DEMO / "scenario.toml", check_etalon=False)


def frozen_copy(tmp_path: Path):
    """The scenario as the workflow's form step loads it: a frozen copy, no prompt_file along."""
    frozen = tmp_path / "frozen.toml"
    shutil.copy(DEMO / "scenario.toml", frozen)
    return load_scenario(frozen, check_etalon=False, check_bricks=False)


def write_run(results: Path, slug: str, rep: int, ok: bool = True, status: str = "valid"):
    folder = results / "runs" / slug / f"r{rep:02d}"
    (folder / "validators").mkdir(parents=True)
    # The patch and the message differ per run, but name no cell: what a person must rate.
    (folder / "result.patch").write_text(f"--- a/calc.py\n+++ b/calc.py\n+# change {slug[::-1]}\n")
    record = {"facts": {"final_message": f"done ({rep})"}, "outcome": {"status": "completed"}}
    (folder / "run.json").write_text(json.dumps(record))
    task = {"type": "message", "role": "user", "text": "Fix mean in calc.py.", "tool_calls": []}
    (folder / "transcript.jsonl").write_text(json.dumps(task) + "\n")
    outputs = {
        "tests": {"tests_pass": True},
        "behaviour": {"ran_tests": True, "turns": 4},
        "scope": {"scope_clean": True},
        "on_task": {"on_task": True},
    }
    for name, metrics in outputs.items():
        output = {
            "validator": name,
            "mode": "script",
            "ok": ok or name != "tests",
            "metrics": metrics,
            "reasons": {},
            "problem": None,
        }
        (folder / "validators" / f"{name}.json").write_text(json.dumps(output))
    (folder / "measures.json").write_text(json.dumps({"status": status}))


@pytest.fixture
def results(tmp_path: Path, scenario) -> Path:
    results = tmp_path / "results" / "demo"
    for cell in scenario.cells:
        for rep in range(1, REPS + 1):
            write_run(results, cell.slug, rep)
    return results


def all_run_ids(scenario) -> list[str]:
    return [f"{c.slug}/r{rep:02d}" for c in scenario.cells for rep in range(1, REPS + 1)]


def listed_ids(form_text: str) -> list[str]:
    return [line.split('"')[1] for line in form_text.splitlines() if line.startswith("[runs.")]


def test_the_blank_form_lists_every_valid_run_with_its_material(tmp_path, results, scenario):
    blank = write_blank_form(results, frozen_copy(tmp_path), "review", seed=SEED)
    assert blank == results / "forms" / "review.blank.toml"
    ids = listed_ids(blank.read_text())
    assert len(ids) == len(set(ids)) == len(scenario.cells) * REPS
    keys = json.loads(ResultsFolder(results).form_keys("review").read_text())
    assert sorted(keys["runs"].values()) == sorted(all_run_ids(scenario))
    material = ResultsFolder(results).form_material("review")
    for form_id in ids:
        run = keys["runs"][form_id]
        patch = results / "runs" / run / "result.patch"
        assert (material / f"{form_id}.diff").read_bytes() == patch.read_bytes()
        rep = int(run.rsplit("/r", 1)[1])
        assert (material / f"{form_id}.final_message.md").read_text() == f"done ({rep})\n"
        task = (material / f"{form_id}.task_prompt.md").read_text()
        assert "mean" in task and "(not recorded)" not in task
    assert "# readable = " in blank.read_text()


def test_neither_the_form_nor_its_material_names_a_cell(results, scenario):
    blank = write_blank_form(results, scenario, "review", seed=SEED)
    forms_dir = blank.parent
    texts = [p.read_text() for p in forms_dir.rglob("*") if p.is_file()]
    names = [p.name for p in forms_dir.rglob("*")]
    telltales = [str(results), "runs/", "/r01"]
    for cell in scenario.cells:
        telltales += [cell.name, cell.slug, *cell.delta.values()]
    for telltale in telltales:
        for text in texts + names:
            assert telltale not in text, telltale
    assert not (forms_dir / ".form-keys").exists()


def test_the_order_is_shuffled_and_seeded(tmp_path, results, scenario):
    first = write_blank_form(results, scenario, "review", seed=SEED).read_text()
    keys = json.loads(ResultsFolder(results).form_keys("review").read_text())["runs"]
    order = [keys[i] for i in listed_ids(first)]
    assert order != sorted(order)

    twin = tmp_path / "twin" / "demo"
    shutil.copytree(results / "runs", twin / "runs")
    assert write_blank_form(twin, scenario, "review", seed=SEED).read_text() == first

    other = tmp_path / "other" / "demo"
    shutil.copytree(results / "runs", other / "runs")
    other_text = write_blank_form(other, scenario, "review", seed=SEED + 1).read_text()
    assert listed_ids(other_text) != listed_ids(first)


def test_an_unscored_or_failed_run_is_not_listed(tmp_path, scenario):
    results = tmp_path / "demo"
    write_run(results, "nothing-off", 1)
    write_run(results, "nothing-off", 2, ok=False)
    write_run(results, "rule-off", 1, status="failed")
    write_blank_form(results, scenario, "review", seed=SEED)
    keys = json.loads(ResultsFolder(results).form_keys("review").read_text())["runs"]
    assert list(keys.values()) == ["nothing-off/r01"]


def test_a_rewritten_blank_keeps_its_ids_and_never_touches_the_filled_form(results, scenario):
    blank = write_blank_form(results, scenario, "review", seed=SEED)
    first_keys = json.loads(ResultsFolder(results).form_keys("review").read_text())["runs"]
    filled = ResultsFolder(results).filled_form("review")
    filled.write_text(blank.read_text().replace("# readable = ", "readable = true", 1))
    before = filled.read_bytes()
    write_run(results, "nothing-off", REPS + 1)
    write_blank_form(results, scenario, "review")
    keys = json.loads(ResultsFolder(results).form_keys("review").read_text())["runs"]
    assert keys.items() >= first_keys.items()
    assert len(keys) == len(first_keys) + 1
    assert filled.read_bytes() == before


def test_a_blank_form_holding_answers_is_not_overwritten(results, scenario):
    blank = write_blank_form(results, scenario, "review", seed=SEED)
    blank.write_text(blank.read_text().replace("# readable = ", "readable = false", 1))
    answered = blank.read_bytes()
    with pytest.raises(AgentabError, match="review.toml"):
        write_blank_form(results, scenario, "review")
    assert blank.read_bytes() == answered


def fill(results: Path, answers: dict[str, str]) -> None:
    """Answer the blank form's runs in its order: one TOML answer text per id index."""
    text = ResultsFolder(results).blank_form("review").read_text()
    ids = listed_ids(text)
    for index, answer in answers.items():
        header = f'[runs."{ids[index]}"]'
        text = text.replace(header, f"{header}\n{answer}")
    ResultsFolder(results).filled_form("review").write_text(text)


def run_of(results: Path, index: int) -> str:
    ids = listed_ids(ResultsFolder(results).blank_form("review").read_text())
    return json.loads(ResultsFolder(results).form_keys("review").read_text())["runs"][ids[index]]


def test_answers_are_read_per_run_and_the_rest_is_pending(results, scenario):
    before = read_form_answers(results, scenario, "review")
    assert before.answers == {}
    write_blank_form(results, scenario, "review", seed=SEED)
    fill(results, {0: "readable = true", 1: "readable = false"})
    got = read_form_answers(results, scenario, "review")
    assert got.answers == {
        run_of(results, 0): {"readable": True},
        run_of(results, 1): {"readable": False},
    }
    assert len(got.pending) == len(scenario.cells) * REPS - 2
    assert all(metrics == ["readable"] for metrics in got.pending.values())
    assert got.output_for(run_of(results, 0))["metrics"] == {"readable": True}
    assert got.output_for(run_of(results, 2)) is None


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ({0: "readable = [true]"}, "an answer is a single value"),
        ({0: "readable = true", 1: "readable = 3"}, "is a number here but a boolean"),
        ({0: "legible = true"}, "is not a metric this form fills"),
        ({0: "tests_pass = false"}, "produced by validator 'tests'"),
        ({0: "on_task = false"}, "produced by validator 'on_task'"),
    ],
)
def test_a_wrong_answer_is_refused_naming_the_form_and_the_id(results, scenario, answers, expected):
    write_blank_form(results, scenario, "review", seed=SEED)
    fill(results, answers)
    with pytest.raises(AgentabError) as raised:
        read_form_answers(results, scenario, "review")
    message = str(raised.value)
    ids = listed_ids(ResultsFolder(results).blank_form("review").read_text())
    assert expected in message
    assert "review.toml" in message and ids[max(answers)] in message and "fix:" in message


def test_an_unknown_id_is_refused(results, scenario):
    write_blank_form(results, scenario, "review", seed=SEED)
    form = ResultsFolder(results).filled_form("review")
    form.write_text('[runs."deadbeef"]\nreadable = true\n')
    with pytest.raises(AgentabError, match="unknown id 'deadbeef'"):
        read_form_answers(results, scenario, "review")


def test_a_form_that_fills_a_judged_metric_is_a_load_problem(tmp_path, scenario):
    assert form_fill_conflicts(scenario) == []
    assert form_spec_problems(scenario) == []
    copy = tmp_path / "demo"
    shutil.copytree(DEMO, copy)
    toml = copy / "scenario.toml"
    toml.write_text(toml.read_text().replace('fills = ["readable"]', 'fills = ["on_task"]'))
    toml_text = toml.read_text().replace('show = ["diff"', 'show = ["stream", "diff"')
    toml.write_text(toml_text)
    with pytest.raises(AgentabError):
        load_scenario(toml, check_etalon=False)
    data = scenario  # the loader refuses it; the check itself is what the loader may call
    data.validators["review"].options["fills"] = ["on_task"]
    data.validators["review"].options["show"] = ["stream", "diff"]
    conflicts = form_fill_conflicts(data)
    assert [p.key for p in conflicts] == ["validators.review.fills"]
    assert "'on_task'" in conflicts[0].message
    assert [p.key for p in form_spec_problems(data)] == ["validators.review.show"]


def test_the_form_command_writes_blanks_and_counts_pending(results, capsys):
    from agentab.cli import main

    shutil.copy(DEMO / "scenario.toml", results / "scenario.toml")
    assert main(["form", "blank", str(results), "--seed", str(SEED)]) == 0
    assert "review.blank.toml: 12 runs" in capsys.readouterr().out
    assert main(["form", "status", str(results)]) == 0
    forms = results / "forms"
    assert capsys.readouterr().out.splitlines() == [
        "demo: 2 of 2 forms pending",
        "review: 0 of 12 runs answered, 12 pending",
        "  items pending: readable (12 runs)",
        f"  not started: copy {forms / 'review.blank.toml'} to {forms / 'review.toml'} and "
        f"answer it (each run's material is in {forms / 'review.material'})",
        # The demo's form that checks the judge: its sample of 36 holds all 12 runs here.
        "people: 0 of 12 runs answered, 12 pending",
        "  items pending: on_task_person (12 runs)",
        f"  not started: copy {forms / 'people.blank.toml'} to {forms / 'people.toml'} and "
        f"answer it (each run's material is in {forms / 'people.material'})",
    ]
    fill(results, {0: "readable = true"})
    assert main(["form", "status", str(results)]) == 0
    out = capsys.readouterr().out
    assert "review: 1 of 12 runs answered, 11 pending" in out
    assert f"  filling: {forms / 'review.toml'}" in out
    fill(results, {0: "readable = 1.5", 1: "readable = true"})
    assert main(["form", "status", str(results)]) == 2
    assert "is a boolean here but a number" in capsys.readouterr().err
    assert main(["form", "blank", str(results), "--validator", "tests"]) == 2
    assert "no form validator of this name" in capsys.readouterr().err


def test_a_form_answer_for_a_metric_a_script_returns_is_refused_at_ingest(results, scenario):
    # The form declares it fills `readable`; a script starts returning it too.
    output = results / "runs" / scenario.cells[0].slug / "r01" / "validators" / "tests.json"
    data = json.loads(output.read_text())
    data["metrics"]["readable"] = True
    output.write_text(json.dumps(data))
    blank = write_blank_form(results, scenario, "review", seed=SEED)
    form_id = listed_ids(blank.read_text())[0]
    ResultsFolder(results).filled_form("review").write_text(
        f'[runs."{form_id}"]\nreadable = false\n'
    )
    with pytest.raises(AgentabError, match="produced by validator 'tests'"):
        read_form_answers(results, scenario, "review")


def test_a_name_with_a_newline_or_bytes_not_utf8_is_one_quoted_line_of_material(results, scenario):
    """A name with a newline showed as two files in the material; one not UTF-8 crashed it."""
    run = f"{scenario.cells[0].slug}/r01"
    names = ["two\nlines.py", "bad\udcff.py", "calc.py"]  # as git -z gives them
    write_json({"patch": {"files": names}}, results / "runs" / run / "run.json")
    _write_material(results, scenario, "review", {"abcd1234": run}, ["changed_files"])
    material = ResultsFolder(results).form_material("review") / "abcd1234.changed_files.txt"
    assert material.read_text(encoding="utf-8").splitlines() == [
        '"two\\nlines.py"',
        '"bad\\377.py"',
        "calc.py",
    ]


def test_a_final_message_holding_a_lone_surrogate_is_material_escaped(results, scenario):
    run = f"{scenario.cells[0].slug}/r01"
    record = {"facts": {"final_message": "made bad\udcff.py"}, "outcome": {"status": "completed"}}
    write_json(record, results / "runs" / run / "run.json")
    _write_material(results, scenario, "review", {"abcd1234": run}, ["final_message"])
    material = ResultsFolder(results).form_material("review") / "abcd1234.final_message.md"
    assert material.read_text(encoding="utf-8") == "made bad\\udcff.py\n"


def test_the_blank_form_says_what_each_field_means(tmp_path, results, scenario):
    """A person fills a field by its question: the form states it once, above the runs."""
    text = write_blank_form(results, frozen_copy(tmp_path), "review", seed=SEED).read_text()
    asked = scenario.validators["review"].options["questions"]["readable"]
    assert f"#   readable: {asked}" in text
    assert text.index("# The questions:") < text.index("[runs.")
    scenario.validators["review"].options.pop("questions")
    unsaid = write_blank_form(results, scenario, "review", seed=SEED).read_text()
    assert "#   readable: (the scenario does not say what it means" in unsaid
    assert "[validators.review] questions = { readable = " in unsaid


def test_a_question_for_a_metric_the_form_does_not_fill_is_refused(tmp_path):
    copy = tmp_path / "demo"
    shutil.copytree(DEMO, copy)
    toml = copy / "scenario.toml"
    toml.write_text(toml.read_text().replace("questions = { readable", "questions = { redable"))
    with pytest.raises(AgentabError) as refused:
        load_scenario(toml, check_etalon=False)
    assert "validators.review.questions.redable" in str(refused.value.render())
