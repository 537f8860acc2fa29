"""Every load-time rule of a scenario, each with the key its error names."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from agentab.cli import main
from agentab.errors import ScenarioError
from agentab.scenario import load_scenario
from tests.conftest import make_git_repo

SEED_MATRIX = """
[scenario]
name = "tests-rule"
question = "Does a rule make the agent run the tests?"

[task]
prompt = "Fix mean."

[etalon]
repo = "calc"
tag = "v1.0"

[agent]
harness = "pi"
version = "1.6.0"
provider = "offline"
model = "demo"
thinking = "off"
timeout = "15m"

[protocol]
repetitions = 10

[protocol.limits]
memory = "2G"
processes = 256
disk = "1G"
patch = "1M"

[axes]
context  = ["nothing", "rule", "careful ticket"]
thinking = ["off", "high"]

[deltas.context.rule]
context_files = ["bricks/run-tests.md"]

[deltas.context."careful ticket"]
prompt = "Fix mean, then run the tests."

[deltas.thinking.high]
thinking = "high"

[deltas.harness.extension]
extensions = ["bricks/guard.ts"]

[deltas.harness.agents]
agents = ["bricks/agents/reviewer.md"]

[variants."full stack"]
harness = ["extension", "agents"]
context = "rule"

[validation]
metrics = ["tests_pass", "ran_tests"]

[validators.tests]
mode = "script"
run = ["validators/tests.py"]
"""


# The etalon's calc.py: the demo policy reads it and edits `len(values) - 1`, found once.
CALC = "def mean(values):\n    return sum(values) / (len(values) - 1)\n"


@pytest.fixture
def scenario_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "scenario"
    make_git_repo(folder / "calc", {"calc.py": CALC})
    for rel in (
        "bricks/run-tests.md",
        "bricks/guard.ts",
        "bricks/agents/reviewer.md",
        "validators/tests.py",
    ):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(f"{rel}\n")
    (folder / "validators/tests.py").chmod(0o755)
    return folder


def write(folder: Path, text: str) -> Path:
    path = folder / "scenario.toml"
    path.write_text(textwrap.dedent(text))
    return path


def problems_of(folder: Path, text: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(write(folder, text))
    return caught.value.render()


def test_seed_matrix_has_seven_cells_in_order(scenario_dir: Path) -> None:
    scenario = load_scenario(write(scenario_dir, SEED_MATRIX))
    assert [cell.name for cell in scenario.cells] == [
        "nothing · off",
        "nothing · high",
        "rule · off",
        "rule · high",
        "careful ticket · off",
        "careful ticket · high",
        "full stack",
    ]
    assert scenario.run_count == 70
    assert scenario.reference == "nothing · off"
    full = scenario.cell("full stack")
    assert [b.kind for b in full.bricks] == ["context_files", "extensions", "agents"]
    assert full.delta == {"harness": "extension+agents", "context": "rule"}
    assert scenario.cell("rule-high").agent.thinking == "high"
    assert scenario.cell("careful ticket · off").prompt == "Fix mean, then run the tests."
    assert all(len(b.sha256) == 64 for b in full.bricks)


def test_check_prints_matrix_and_run_count(scenario_dir: Path, capsys) -> None:
    state = ["--state", str(scenario_dir.parent / "state")]
    assert main(["check", *state, str(write(scenario_dir, SEED_MATRIX))]) == 0
    out = capsys.readouterr().out
    assert "offline policy" not in out  # the demo policy edits calc.py, which the etalon has
    assert "cells (7)" in out and "7 cells × 10 repetitions = 70" in out
    assert out.index("nothing · high") < out.index("rule · off") < out.index("full stack")


def test_check_json(scenario_dir: Path, capsys) -> None:
    assert main(["check", "--json", str(write(scenario_dir, SEED_MATRIX))]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"] == 70 and len(data["cells"]) == 7
    assert data["cells"][2]["settings"] == {"context_files": ["bricks/run-tests.md"]}


def test_check_invalid_exits_2_without_traceback(scenario_dir: Path, capsys) -> None:
    path = write(scenario_dir, SEED_MATRIX.replace("repetitions = 10", "repetition = 10"))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "protocol.repetition" in err and "did you mean `repetitions`" in err


def test_check_json_lists_problems(scenario_dir: Path, capsys) -> None:
    path = write(scenario_dir, SEED_MATRIX.replace('thinking = "off"', ""))
    assert main(["check", "--json", str(path)]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["problems"][0]["key"] == "agent.thinking"


@pytest.mark.parametrize(
    "mandatory",
    [
        'harness = "pi"',
        'version = "1.6.0"',
        'provider = "offline"',
        'model = "demo"',
        'thinking = "off"',
        'timeout = "15m"',
    ],
)
def test_every_agent_field_is_mandatory(scenario_dir: Path, mandatory: str) -> None:
    key = mandatory.split(" ")[0]
    message = problems_of(scenario_dir, SEED_MATRIX.replace(mandatory + "\n", "", 1))
    assert f"agent.{key}" in message and "no default" in message


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("repetitions = 10", "protocol.repetitions"),
        ('tag = "v1.0"', "etalon.tag"),
        ('repo = "calc"', "etalon.repo"),
    ],
)
def test_protocol_and_etalon_are_mandatory(scenario_dir: Path, line: str, key: str) -> None:
    assert key in problems_of(scenario_dir, SEED_MATRIX.replace(line + "\n", ""))


def test_task_needs_a_prompt(scenario_dir: Path) -> None:
    message = problems_of(scenario_dir, SEED_MATRIX.replace('prompt = "Fix mean."\n', ""))
    assert "[task]" in message and "prompt" in message


def test_unknown_key_is_refused_with_a_hint(scenario_dir: Path) -> None:
    message = problems_of(scenario_dir, SEED_MATRIX.replace('model = "demo"', 'modle = "demo"'))
    assert "agent.modle" in message and "did you mean `model`" in message


def test_unknown_key_in_a_delta(scenario_dir: Path) -> None:
    message = problems_of(
        scenario_dir, SEED_MATRIX.replace("context_files = [", "context_file = [")
    )
    assert "deltas.context.rule.context_file" in message and "context_files" in message


@pytest.mark.parametrize("value", ["0", "-1", '"10"', "2.5"])
def test_repetitions_is_an_integer_at_least_one(scenario_dir: Path, value: str) -> None:
    message = problems_of(
        scenario_dir, SEED_MATRIX.replace("repetitions = 10", f"repetitions = {value}")
    )
    assert "protocol.repetitions" in message


def test_baseline_may_not_declare_a_delta(scenario_dir: Path) -> None:
    text = SEED_MATRIX + '\n[deltas.context.nothing]\nthinking = "low"\n'
    message = problems_of(scenario_dir, text)
    assert "deltas.context.nothing" in message and "baseline" in message


def test_misspelled_axis_value_has_no_delta(scenario_dir: Path) -> None:
    text = SEED_MATRIX.replace('context  = ["nothing", "rule",', 'context  = ["nothing", "rlue",')
    message = problems_of(scenario_dir, text)
    assert "axes.context" in message and "`rlue`" in message and "did you mean `rule`" in message


def test_delta_used_by_nothing_is_an_error(scenario_dir: Path) -> None:
    text = SEED_MATRIX + '\n[deltas.thinking.hihg]\nthinking = "high"\n'
    message = problems_of(scenario_dir, text)
    assert "deltas.thinking.hihg" in message and "used by no axis" in message


def test_variant_names_only_declared_deltas(scenario_dir: Path) -> None:
    text = SEED_MATRIX.replace(
        'harness = ["extension", "agents"]', 'harness = ["extension", "agent"]'
    )
    message = problems_of(scenario_dir, text)
    assert "variants.full stack.harness" in message and "`harness = agent`" in message


def test_two_deltas_setting_one_scalar_in_a_cell(scenario_dir: Path) -> None:
    text = SEED_MATRIX.replace(
        "[deltas.harness.agents]", '[deltas.harness.agents]\nthinking = "low"'
    ).replace('context = "rule"', 'context = "rule"\nthinking = "high"')
    message = problems_of(scenario_dir, text)
    assert "thinking is set by both" in message


def test_two_cells_with_the_same_name(scenario_dir: Path) -> None:
    text = SEED_MATRIX + '\n[variants."rule · off"]\ncontext = "rule"\n'
    assert "two cells are named `rule · off`" in problems_of(scenario_dir, text)


def test_two_cells_with_the_same_slug(scenario_dir: Path) -> None:
    text = SEED_MATRIX + '\n[variants."Rule -- Off"]\ncontext = "rule"\n'
    assert "share the results folder runs/rule-off/" in problems_of(scenario_dir, text)


def test_brick_must_exist(scenario_dir: Path) -> None:
    (scenario_dir / "bricks/guard.ts").unlink()
    message = problems_of(scenario_dir, SEED_MATRIX)
    assert "deltas.harness.extension.extensions" in message and "does not exist" in message


def test_brick_may_not_escape_the_scenario_folder(scenario_dir: Path) -> None:
    (scenario_dir.parent / "outside.md").write_text("x")
    text = SEED_MATRIX.replace('"bricks/run-tests.md"', '"../outside.md"')
    message = problems_of(scenario_dir, text)
    assert "deltas.context.rule.context_files" in message and "escapes" in message


def test_reference_must_be_a_cell(scenario_dir: Path) -> None:
    text = SEED_MATRIX.replace("repetitions = 10", 'repetitions = 10\nreference = "rule · of"')
    message = problems_of(scenario_dir, text)
    assert "protocol.reference" in message and "did you mean `rule · off`" in message


def test_reference_by_slug(scenario_dir: Path) -> None:
    text = SEED_MATRIX.replace("repetitions = 10", 'repetitions = 10\nreference = "rule-off"')
    assert load_scenario(write(scenario_dir, text)).reference == "rule · off"


def test_tag_that_is_a_branch_is_refused(scenario_dir: Path) -> None:
    message = problems_of(scenario_dir, SEED_MATRIX.replace('tag = "v1.0"', 'tag = "main"'))
    assert "etalon.tag" in message and "is a branch, not a tag" in message


def test_tag_that_is_a_sha_is_refused(scenario_dir: Path) -> None:
    message = problems_of(scenario_dir, SEED_MATRIX.replace('tag = "v1.0"', 'tag = "0123abcd"'))
    assert "etalon.tag" in message and "is a commit SHA" in message


def test_missing_tag_lists_the_tags(scenario_dir: Path) -> None:
    message = problems_of(scenario_dir, SEED_MATRIX.replace('tag = "v1.0"', 'tag = "v9"'))
    assert "etalon.tag" in message and "tags there: v1.0" in message


def test_unreachable_repository(scenario_dir: Path) -> None:
    message = problems_of(scenario_dir, SEED_MATRIX.replace('repo = "calc"', 'repo = "nowhere"'))
    assert "etalon.repo" in message and "does not exist" in message


def test_bundle_etalon(scenario_dir: Path, tmp_path: Path) -> None:
    import subprocess

    subprocess.run(
        ["git", "bundle", "create", str(scenario_dir / "calc.bundle"), "--all"],
        cwd=scenario_dir / "calc",
        check=True,
        capture_output=True,
    )
    text = SEED_MATRIX.replace('repo = "calc"', 'repo = "calc.bundle"')
    assert load_scenario(write(scenario_dir, text)).etalon.location.endswith("calc.bundle")


def test_toml_syntax_error_names_the_line(scenario_dir: Path) -> None:
    message = problems_of(scenario_dir, SEED_MATRIX.replace('model = "demo"', "model = demo"))
    assert "not valid TOML" in message and ":17:" in message


def test_form_may_not_fill_a_judge_metric(scenario_dir: Path) -> None:
    (scenario_dir / "rubric.md").write_text("r")
    (scenario_dir / "schema.json").write_text(
        json.dumps({"type": "object", "properties": {"ran_tests": {"type": "boolean"}}})
    )
    text = SEED_MATRIX + textwrap.dedent(
        """
        [validators.scope]
        mode = "judge"
        model = "offline:demo"
        rubric_file = "rubric.md"
        schema_file = "schema.json"

        [validators.review]
        mode = "form"
        fills = ["ran_tests"]
        """
    )
    message = problems_of(scenario_dir, text)
    assert "validators.review.fills" in message and "validator `scope` produces" in message


def test_all_problems_are_reported_at_once(scenario_dir: Path) -> None:
    text = (
        SEED_MATRIX.replace('tag = "v1.0"', 'tag = "main"')
        + '\n[deltas.thinking.hihg]\nthinking = "high"\n'
    )
    (scenario_dir / "bricks/guard.ts").unlink()
    message = problems_of(scenario_dir, text)
    assert "deltas.thinking.hihg" in message and "guard.ts" in message


def test_frozen_copy_loads_without_its_folder(scenario_dir: Path, tmp_path: Path) -> None:
    frozen = tmp_path / "elsewhere" / "scenario.toml"
    frozen.parent.mkdir()
    frozen.write_text(textwrap.dedent(SEED_MATRIX))
    scenario = load_scenario(frozen, check_etalon=False, check_bricks=False)
    assert len(scenario.cells) == 7 and scenario.metrics == ["tests_pass", "ran_tests"]


SHIPPED = Path(__file__).resolve().parents[2] / "scenarios"
# The scenarios the README and the docs name: a glob that finds none of them checks nothing.
SHIPPED_NAMES = {"demo", "demo-claude-code", "demo-codex", "demo-gemini", "harness-axis"}


def test_the_shipped_scenarios_are_valid() -> None:
    paths = sorted(SHIPPED.glob("*/scenario.toml"))
    assert {path.parent.name for path in paths} >= SHIPPED_NAMES
    for path in paths:
        # A real repository's etalon is on its host, out of this suite's reach: the e2e suite
        # runs it from the project's sdist (tests/e2e/test_real_repository.py).
        remote = re.search(r'(?m)^repo = "https://', path.read_text()) is not None
        assert load_scenario(path, check_etalon=not remote).cells, path


def test_the_harness_axis_scenario_loads() -> None:
    scenario = load_scenario(SHIPPED / "harness-axis" / "scenario.toml")
    assert len(scenario.cells) == 4
    assert {cell.agent.harness for cell in scenario.cells} == {"pi", "claude-code"}


def test_an_offline_policy_must_exist(scenario_dir: Path) -> None:
    message = problems_of(scenario_dir, SEED_MATRIX.replace('model = "demo"', 'model = "dmeo"'))
    assert "agent.model" in message and "no policy named `dmeo`" in message
    assert "did you mean `demo`" in message


# --- silent duplicates, refused at load -------------------------------------------------------


def test_repetitions_given_as_a_whole_float_is_refused(scenario_dir: Path) -> None:
    message = problems_of(
        scenario_dir, SEED_MATRIX.replace("repetitions = 10", "repetitions = 10.0")
    )
    assert "protocol.repetitions" in message and "repetitions = 10" in message


def test_a_zero_timeout_is_refused(scenario_dir: Path) -> None:
    message = problems_of(scenario_dir, SEED_MATRIX.replace('timeout = "15m"', 'timeout = "0s"'))
    assert "agent.timeout" in message


def test_an_empty_delta_is_refused(scenario_dir: Path) -> None:
    text = SEED_MATRIX.replace('context_files = ["bricks/run-tests.md"]\n', "", 1)
    message = problems_of(scenario_dir, text)
    assert "deltas.context.rule" in message and "sets nothing" in message


def test_a_delta_equal_to_the_baseline_is_refused(scenario_dir: Path) -> None:
    text = SEED_MATRIX.replace(
        '[deltas.thinking.high]\nthinking = "high"', '[deltas.thinking.high]\nthinking = "off"'
    )
    message = problems_of(scenario_dir, text)
    assert "deltas.thinking.high.thinking" in message and "changes nothing" in message


def test_a_variant_of_baseline_values_only_is_refused(scenario_dir: Path) -> None:
    text = SEED_MATRIX + '\n[variants."same as baseline"]\ncontext = "nothing"\nthinking = "off"\n'
    message = problems_of(scenario_dir, text)
    assert "same as baseline" in message and "it is the baseline cell" in message


def test_a_variant_equal_to_a_grid_cell_is_refused_naming_both(scenario_dir: Path) -> None:
    text = SEED_MATRIX + '\n[variants."rule again"]\ncontext = "rule"\n'
    message = problems_of(scenario_dir, text)
    assert "`rule · off` and `rule again`" in message and "silent duplicate" in message


def test_two_bricks_with_the_same_content_make_duplicate_cells(scenario_dir: Path) -> None:
    (scenario_dir / "bricks" / "copy.md").write_text("bricks/run-tests.md\n")
    text = SEED_MATRIX.replace(
        'context  = ["nothing", "rule", "careful ticket"]',
        'context  = ["nothing", "rule", "copy", "careful ticket"]',
    ).replace(
        '[deltas.context."careful ticket"]',
        '[deltas.context.copy]\ncontext_files = ["bricks/copy.md"]\n\n[deltas.context."careful ticket"]',
    )
    message = problems_of(scenario_dir, text)
    assert "`rule · off` and `copy · off`" in message


def test_a_folder_is_not_a_context_file(scenario_dir: Path) -> None:
    text = SEED_MATRIX.replace(
        'context_files = ["bricks/run-tests.md"]', 'context_files = ["bricks"]'
    )
    message = problems_of(scenario_dir, text)
    assert "must be a regular file" in message and "deltas.context.rule.context_files" in message


def test_a_skill_is_a_folder_with_skill_md(scenario_dir: Path) -> None:
    (scenario_dir / "bricks" / "empty-skill").mkdir()
    text = SEED_MATRIX.replace(
        'extensions = ["bricks/guard.ts"]', 'skills = ["bricks/empty-skill"]'
    )
    assert "has none" in problems_of(scenario_dir, text)
    text = SEED_MATRIX.replace('extensions = ["bricks/guard.ts"]', 'skills = ["bricks/guard.ts"]')
    assert "this is a file" in problems_of(scenario_dir, text)


def test_links_that_lead_out_of_the_scenario_are_refused(
    scenario_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret\n")
    (scenario_dir / "bricks" / "link.md").symlink_to(outside)
    text = SEED_MATRIX.replace('"bricks/run-tests.md"', '"bricks/link.md"')
    assert "escapes the scenario's folder" in problems_of(scenario_dir, text)
    skill = scenario_dir / "bricks" / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\n")
    (skill / "notes.md").symlink_to(outside)
    text = SEED_MATRIX.replace('extensions = ["bricks/guard.ts"]', 'skills = ["bricks/skill"]')
    assert "leads out of the scenario's folder" in problems_of(scenario_dir, text)


def test_a_harness_delta_needs_its_version(scenario_dir: Path) -> None:
    text = SEED_MATRIX.replace(
        '[deltas.thinking.high]\nthinking = "high"',
        '[deltas.thinking.high]\nharness = "pi"\nthinking = "high"',
    )
    message = problems_of(scenario_dir, text)
    assert "deltas.thinking.high.harness" in message  # pi is already the baseline's harness
    assert "deltas.thinking.high.version" in message


def test_an_unknown_harness_is_refused_with_the_known_ones(scenario_dir: Path) -> None:
    message = problems_of(scenario_dir, SEED_MATRIX.replace('harness = "pi"', 'harness = "pj"'))
    assert "agent.harness" in message and "pi" in message


def test_a_task_too_long_for_a_command_line_is_refused_at_load(scenario_dir: Path) -> None:
    (scenario_dir / "task.md").write_text("x" * (200 * 1024))
    text = SEED_MATRIX.replace('prompt = "Fix mean."', 'prompt_file = "task.md"')
    message = problems_of(scenario_dir, text)
    assert "[task]" in message and "128 KiB" in message


def test_a_scenario_file_that_is_not_utf8_names_its_line(scenario_dir: Path) -> None:
    path = scenario_dir / "scenario.toml"
    path.write_bytes(textwrap.dedent(SEED_MATRIX).encode().replace(b"Fix mean.", b"Fix \xe9."))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    text = caught.value.render()
    assert "scenario.toml:7" in text and "UTF-8" in text  # the line of `prompt`


def test_check_states_the_job_count_and_warns_on_a_huge_matrix(scenario_dir: Path, capsys) -> None:
    path = write(scenario_dir, SEED_MATRIX.replace("repetitions = 10", "repetitions = 100000"))
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "jobs        2100000" in out and "warning" in out and "agentab plan" in out
    path = write(scenario_dir, SEED_MATRIX)
    assert main(["check", str(path)]) == 0
    assert "warning" not in capsys.readouterr().out


def test_check_says_which_bricks_a_receipt_cannot_prove(scenario_dir: Path, capsys) -> None:
    assert main(["check", str(write(scenario_dir, SEED_MATRIX))]) == 0
    out = capsys.readouterr().out
    assert "receipt     cannot prove that bricks/agents/reviewer.md reaches the model on pi" in out
    assert "bricks/run-tests.md" not in out.split("receipt", 1)[1]


def test_check_says_where_a_real_providers_requests_go_and_how_thinking_is_checked(
    scenario_dir: Path, capsys
) -> None:
    text = SEED_MATRIX.replace('provider = "offline"', 'provider = "anthropic"')
    text = text.replace('model = "demo"', 'model = "claude-sonnet-4-5"')
    assert main(["check", "--no-credentials", str(write(scenario_dir, text))]) == 0
    out = capsys.readouterr().out
    assert "requests to anthropic pass through a recording proxy" in out
    assert "https://api.anthropic.com" in out
    assert "thinking high on pi with anthropic/claude-sonnet-4-5" in out
    assert "thinking off" not in out.split("receipt", 1)[1]


def test_a_step_skips_the_schema_check_and_gets_the_same_scenario(scenario_dir: Path) -> None:
    path = write(scenario_dir, SEED_MATRIX)
    checked = load_scenario(path, check_etalon=False)
    trusted = load_scenario(path, check_etalon=False, check_schema=False)
    assert trusted == checked


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('model = "demo"', 'modle = "demo"', "agent.modle"),
        ("repetitions = 10", 'repetitions = "ten"', "protocol.repetitions"),
        ('timeout = "15m"\n', "", "agent.timeout"),
    ],
)
def test_a_file_broken_since_the_workflow_checked_it_is_still_explained(
    scenario_dir: Path, old: str, new: str, key: str
) -> None:
    path = write(scenario_dir, SEED_MATRIX.replace(old, new, 1))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path, check_etalon=False, check_schema=False)
    assert key in caught.value.render()


def test_check_refuses_an_offline_policy_written_for_another_repository(
    scenario_dir: Path, capsys
) -> None:
    # The demo policy reads and edits calc.py: on an etalon without it, every run's tool call
    # would fail on a file that is not there.
    make_git_repo(scenario_dir / "other", {"src/lib.py": "x = 1\n"})
    text = SEED_MATRIX.replace('repo = "calc"', 'repo = "other"')
    state = ["--state", str(scenario_dir.parent / "state")]
    assert main(["check", *state, str(write(scenario_dir, text))]) == 2
    err = capsys.readouterr().err
    assert (
        "[steps[1]] the offline policy `demo` on etalon tag v1.0: step 1 (read calc.py): the "
        "etalon's tag has no file calc.py, and no earlier step writes it" in err
    )
    assert "Writing your own policy" in err


def test_check_warns_when_the_etalon_declares_dependencies_but_no_setup(
    scenario_dir: Path, capsys
) -> None:
    make_git_repo(scenario_dir / "lib", {"calc.py": CALC, "pyproject.toml": "[project]\n"})
    text = SEED_MATRIX.replace('repo = "calc"', 'repo = "lib"')
    state = ["--state", str(scenario_dir.parent / "state")]
    assert main(["check", *state, str(write(scenario_dir, text))]) == 0
    out = capsys.readouterr().out
    assert (
        "declares dependencies (pyproject.toml) but the scenario declares no [etalon] setup" in out
    )
    with_setup = text.replace('tag = "v1.0"', 'tag = "v1.0"\nsetup = ["true"]')
    assert main(["check", *state, str(write(scenario_dir, with_setup))]) == 0
    assert "declares dependencies" not in capsys.readouterr().out


@pytest.mark.slow  # a real venv made in a sandbox: about 8 s
def test_check_setup_runs_the_setup_once_and_says_what_it_made(scenario_dir: Path, capsys) -> None:
    text = SEED_MATRIX.replace(
        'tag = "v1.0"',
        'tag = "v1.0"\nsetup = ["python3 -m venv .venv"]\npath = [".venv/bin"]',
    )
    state = ["--state", str(scenario_dir.parent / "state")]
    assert main(["check", "--setup", *state, str(write(scenario_dir, text))]) == 0
    err = capsys.readouterr().err
    assert re.search(r"setup      ran in [0-9.]+s; it made \.venv/", err), err
    assert re.search(r"environment pip==[0-9]", err), err
    assert re.search(r"setup      read the package-manager configuration files: (none|~/|/)", err)
    assert not list((scenario_dir.parent / "state" / "work").iterdir())  # nothing left behind


def test_check_setup_shows_a_failed_setup_and_its_output(scenario_dir: Path, capsys) -> None:
    text = SEED_MATRIX.replace('tag = "v1.0"', 'tag = "v1.0"\nsetup = ["echo zq-why; false"]')
    state = ["--state", str(scenario_dir.parent / "state")]
    assert main(["check", "--setup", *state, str(write(scenario_dir, text))]) == 2
    err = capsys.readouterr().err
    assert "the etalon's setup failed (exit status 1): zq-why" in err and "Traceback" not in err


def test_check_states_the_minimum_of_runs_and_warns_below_it(scenario_dir: Path, capsys) -> None:
    state = ["--state", str(scenario_dir.parent / "state")]
    path = write(scenario_dir, SEED_MATRIX.replace("repetitions = 10", "repetitions = 3"))
    assert main(["check", *state, "--no-credentials", str(path)]) == 0
    out = capsys.readouterr().out
    assert "a gap is established only from at least 9 valid runs in each of its two cells" in out
    assert "[protocol] repetitions = 3 is below the 9 valid runs per cell" in out
    assert main(["check", *state, "--no-credentials", str(write(scenario_dir, SEED_MATRIX))]) == 0
    assert "is below the 9 valid runs" not in capsys.readouterr().out


def test_check_reads_the_credentials_a_real_provider_needs(scenario_dir: Path, capsys) -> None:
    real = SEED_MATRIX.replace('provider = "offline"', 'provider = "anthropic"')
    assert real != SEED_MATRIX
    path = write(scenario_dir, real)
    keys = scenario_dir / "credentials.toml"
    keys.write_text('[anthropc]\napi_key = "sk-x"\n')
    config = scenario_dir / "config.yaml"
    config.write_text(f"credentials: {keys}\n")
    state = ["--state", str(scenario_dir.parent / "state"), "--config", str(config)]
    assert main(["check", *state, str(path)]) == 2
    err = capsys.readouterr().err
    assert "[anthropic.api_key] no anthropic API key in the credentials file" in err
    assert "; the file has [anthropc]" in err
    assert f'fix: add the lines [anthropic] and api_key = "..." to {keys}' in err
    keys.write_text('[anthropic]\napi_key = "sk-x"\n')
    assert main(["check", *state, str(path)]) == 0
    assert f"keys        [anthropic] api_key found in {keys}" in capsys.readouterr().out


def test_check_of_an_offline_scenario_reads_no_credentials(scenario_dir: Path, capsys) -> None:
    path = str(write(scenario_dir, SEED_MATRIX))
    options = ["--state", str(scenario_dir.parent / "s"), "--config", str(scenario_dir / "none")]
    assert main(["check", *options, path]) == 0
    assert "keys        none needed" in capsys.readouterr().out
