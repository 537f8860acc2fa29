"""Inputs that once crashed a run, the whole workflow, or measured nothing (issue #28): each is
refused at load by `agentab check`, naming the file, the key and the fix, and no traceback
escapes. The workflow loads scenarios through the same `load_scenario`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from agentab.cli import main
from agentab.scenario import load_scenario

DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo"
SKILL = "---\nname: sk\ndescription: A skill for the test.\n---\nDo it.\n"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder, symlinks=True)
    return folder


def edit(folder: Path, old: str, new: str, rel: str = "scenario.toml") -> None:
    text = (folder / rel).read_text()
    assert old in text, old
    (folder / rel).write_text(text.replace(old, new, 1))


def append(folder: Path, text: str) -> None:
    with (folder / "scenario.toml").open("a") as file:
        file.write(text)


def add_skill(folder: Path, skill_md: str = SKILL) -> None:
    (folder / "bricks" / "sk").mkdir()
    (folder / "bricks" / "sk" / "SKILL.md").write_text(skill_md)
    edit(folder, 'context_files = ["bricks/run-tests.md"]', 'skills = ["bricks/sk"]')


def use_policy_file(folder: Path, text: str) -> None:
    (folder / "policy.toml").write_text(text)
    edit(folder, 'model = "demo"', 'model = "policy.toml"')


def check(folder: Path, capsys) -> str:
    code = main(["check", "--no-etalon", str(folder / "scenario.toml")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert "fix: " in err
    return err


JUDGE_TWIN = """
[validators.on_task_again]
mode = "judge"
model = "offline:demo"
rubric_file = "rubrics/on_task.md"
schema_file = "rubrics/on_task.schema.json"
"""
LONG = "r" * 300
DEEP = "\n[deep]\nx = " + "[" * 3000 + "]" * 3000 + "\n"


def gemini_with_a_skill(folder: Path) -> None:
    add_skill(folder)
    edit(folder, 'harness = "pi"', 'harness = "gemini"')
    edit(folder, 'version = "1.6.0"', 'version = "0.61.0"')


def link_loop_in_a_skill(folder: Path) -> None:
    add_skill(folder)
    os.symlink("b", folder / "bricks" / "sk" / "a")
    os.symlink("a", folder / "bricks" / "sk" / "b")


def append_bytes(folder: Path) -> None:
    path = folder / "scenario.toml"
    path.write_bytes(path.read_bytes() + b"# caf\xe9\n")


# name -> (what to break, words the refusal must hold: file, key, fix)
CASES: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "cell name too long for a folder": (
        lambda d: (
            edit(d, 'context = ["nothing", "rule"]', f'context = ["nothing", "{LONG}"]'),
            edit(d, "[deltas.context.rule]", f"[deltas.context.{LONG}]"),
        ),
        ("scenario.toml", "[axes]", "runs/<slug>/", "shorten"),
    ),
    "validator name that is a path": (
        lambda d: edit(d, "[validators.tests]", '[validators."../x"]'),
        ("scenario.toml", '[validators."../x"]', "cannot name a file", "e.g. [validators.x]"),
    ),
    "validator name with a slash": (
        lambda d: edit(d, "[validators.tests]", '[validators."a/b"]'),
        ('[validators."a/b"]', "letters, digits"),
    ),
    "judge schema that is not an object": (
        lambda d: (d / "rubrics" / "on_task.schema.json").write_text('{"type": "string"}'),
        ("on_task.schema.json", "[validators.on_task.schema_file]", '"type": "object"'),
    ),
    "judge schema that is an array": (
        lambda d: (d / "rubrics" / "on_task.schema.json").write_text("[1, 2]"),
        ("on_task.schema.json", "[validators.on_task.schema_file]", "fix the schema"),
    ),
    "two judges fill one metric": (
        lambda d: append(d, JUDGE_TWIN),
        ("[validators.on_task_again.schema_file]", "both fill the metric `on_task`", "let one"),
    ),
    "a form fills a metric another form fills": (
        lambda d: append(d, '\n[validators.again]\nmode = "form"\nfills = ["readable"]\n'),
        ("[validators.again.fills]", "`readable`", "remove it from fills"),
    ),
    "judge model given as an alias": (
        lambda d: edit(d, 'model = "offline:demo"', 'model = "claude-sonnet-4-5"'),
        ("[validators.on_task.model]", "alias", "claude-sonnet-4-5-YYYYMMDD"),
    ),
    "empty judge rubric": (
        lambda d: (d / "rubrics" / "on_task.md").write_text(" \n\t\n"),
        ("rubrics/on_task.md", "[validators.on_task.rubric_file]", "is empty", "write what"),
    ),
    "offline policy that is not TOML": (
        lambda d: use_policy_file(d, "[policy\n"),
        ("policy.toml", "[agent.model]", "not valid TOML", "fix the syntax"),
    ),
    "offline policy step with an unknown action": (
        lambda d: use_policy_file(d, '[policy]\n[[steps]]\naction = "reed"\npath = "calc.py"\n'),
        ("policy.toml", "[agent.model]", "steps[1].action", "'reed'", "read, edit, write, run"),
    ),
    "empty context brick": (
        lambda d: (d / "bricks" / "run-tests.md").write_text("  \n"),
        ("bricks/run-tests.md", "[deltas.context.rule.context_files]", "is empty", "write"),
    ),
    "skill without front matter": (
        lambda d: add_skill(d, "Just do it.\n"),
        ("bricks/sk/SKILL.md", "[deltas.context.rule.skills]", "no name", "name: run-tests"),
    ),
    "validator script without its exec bit": (
        lambda d: (d / "validators" / "behaviour.py").chmod(0o644),
        ("validators/behaviour.py", "[validators.behaviour.run]", "not executable", "chmod +x /"),
    ),
    "tests validator with nothing to run": (
        lambda d: edit(d, 'tests = ["test_calc.py"]\n', ""),
        ("scenario.toml", "[validators.tests.tests]", "no tests to run", 'tests = ["tests"]'),
    ),
    "tests validator whose hidden folder is missing": (
        lambda d: edit(d, 'runner = "unittest"', 'runner = "unittest"\nhidden = "nowhere"'),
        ("scenario.toml", "[validators.tests.hidden]", "`nowhere` is not a folder", "hidden/tests"),
    ),
    "tests validator with an unknown runner": (
        lambda d: edit(d, 'runner = "unittest"', 'runner = "nose"'),
        ("scenario.toml", "[validators.tests.runner]", "nose"),
    ),
    "task whose hidden tests are missing": (
        lambda d: edit(
            d,
            '[task]\nprompt_file = "task.md"',
            '[tasks.one]\nprompt_file = "task.md"\nhidden_tests = "gone"',
        ),
        ("scenario.toml", "hidden_tests", "`gone` is not a folder"),
    ),
    "empty inline prompt": (
        lambda d: edit(d, 'prompt_file = "task.md"', 'prompt = "  \\n "'),
        ("scenario.toml", "[task.prompt]", "empty", "write the task"),
    ),
    "empty prompt file": (
        lambda d: (d / "task.md").write_text("\n\n"),
        ("task.md", "[task.prompt_file]", "empty", "write the task"),
    ),
    "skill on Gemini CLI": (
        gemini_with_a_skill,
        ("scenario.toml", "skills]", "gemini cannot take the skill `bricks/sk`", "remove it"),
    ),
    "link loop in a skill folder": (
        link_loop_in_a_skill,
        ("bricks/sk", "[deltas.context.rule.skills]", "loop", "fix: "),
    ),
    "prompt file that is not UTF-8": (
        lambda d: (d / "task.md").write_bytes(b"Fix \xff mean.\n"),
        ("task.md", "[task.prompt_file]", "not UTF-8", "save it as UTF-8"),
    ),
    "context brick that is not UTF-8": (
        lambda d: (d / "bricks" / "run-tests.md").write_bytes(b"Run \xfe the tests.\n"),
        ("bricks/run-tests.md", "context_files]", "not UTF-8", "save it as UTF-8"),
    ),
    "scenario that is not UTF-8": (
        append_bytes,
        ("scenario.toml:", "not UTF-8", "save the file as UTF-8"),
    ),
    "prompt file that is a folder": (
        lambda d: edit(d, 'prompt_file = "task.md"', 'prompt_file = "bricks"'),
        ("`bricks`", "[task.prompt_file]", "a folder, not a file", "name the file itself"),
    ),
    "judge schema that is a folder": (
        lambda d: edit(d, 'schema_file = "rubrics/on_task.schema.json"', 'schema_file = "rubrics"'),
        ("`rubrics`", "[validators.on_task.schema_file]", "a folder", "name the file itself"),
    ),
    "deeply nested arrays": (
        lambda d: append(d, DEEP),
        ("scenario.toml:", "[deep.x]", "too deeply", "flatten"),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_input_is_refused_with_file_key_and_fix(demo: Path, capsys, case: str) -> None:
    breaks, words = CASES[case]
    breaks(demo)
    err = check(demo, capsys)
    for word in words:
        assert word in err, f"{word!r} missing from:\n{err}"


@pytest.mark.parametrize(
    "timeout",
    ['"nan"', "nan", "inf", "-inf", "-5", "0", '"0s"', '"0.5s"', "1e300", "99999999999", '"25h"'],
)
@pytest.mark.parametrize(
    "key, old",
    [
        ("agent.timeout", 'timeout = "2m"'),
        ("validators.tests.timeout", 'timeout = "1m"'),
        ("etalon.setup_timeout", 'tag = "v1.0"'),
    ],
)
def test_every_duration_key_must_be_a_sane_time_limit(
    demo: Path, capsys, timeout: str, key: str, old: str
) -> None:
    new = (
        f"{old}\nsetup_timeout = {timeout}" if key.startswith("etalon") else f"timeout = {timeout}"
    )
    edit(demo, old, new)
    err = check(demo, capsys)
    assert f"[{key}]" in err and "scenario.toml:" in err
    assert 'fix: write a duration such as "90s"' in err


@pytest.mark.parametrize("rel", ["scenario.toml", "task.md", "bricks/run-tests.md"])
def test_a_byte_order_mark_is_accepted_and_dropped(demo: Path, rel: str) -> None:
    path = demo / rel
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    scenario = load_scenario(demo / "scenario.toml", check_etalon=False)
    assert not scenario.cells[0].prompt.startswith("\ufeff")
    assert scenario.cells[0].prompt == (DEMO / "task.md").read_text()


def test_a_pinned_judge_model_and_a_skill_with_front_matter_load(demo: Path) -> None:
    edit(demo, 'model = "offline:demo"', 'model = "claude-sonnet-4-5-20250929"')
    add_skill(demo)
    scenario = load_scenario(demo / "scenario.toml", check_etalon=False)
    assert scenario.validators["on_task"].options["model"] == "claude-sonnet-4-5-20250929"
    assert any(brick.kind == "skills" for cell in scenario.cells for brick in cell.bricks)


def test_the_shipped_scenarios_still_pass_check(capsys) -> None:
    scenarios = sorted(DEMO.parent.glob("*/scenario.toml"))
    assert len(scenarios) >= 5 and DEMO / "scenario.toml" in scenarios
    for scenario in scenarios:
        checked = ["check", "--no-etalon", "--no-credentials", "--no-server", str(scenario)]
        assert main(checked) == 0, capsys.readouterr().err
