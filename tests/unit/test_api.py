"""`import agentab`: the names a script needs, and `read_results`, a results folder as a pandas
DataFrame with a row per run and metric (docs/api.md)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas
import pytest

import agentab
from agentab.synthesis.runs.frame import COLUMNS

ROOT = Path(__file__).resolve().parents[2]
DEMO_RESULTS = ROOT / "tests" / "unit" / "fixtures" / "demo-results"
API_PAGE = ROOT / "docs" / "api.md"
CONTRACT = ["tests_pass", "ran_tests", "turns", "scope_clean", "on_task", "readable"]


def measures_files(folder: Path) -> dict[str, dict]:
    """run (`rule-off/r01`) -> its measures.json, read here without agentab."""
    return {
        f"{path.parent.parent.name}/{path.parent.name}": json.loads(path.read_text())
        for path in sorted(folder.glob("runs/*/r*/measures.json"))
    }


def demo_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "results" / "demo"
    shutil.copytree(DEMO_RESULTS, folder)
    return folder


def test_read_results_gives_the_demo_runs_a_row_per_run_and_metric():
    runs = agentab.read_results(DEMO_RESULTS)
    files = measures_files(DEMO_RESULTS)
    assert isinstance(runs, pandas.DataFrame)
    assert list(runs.columns) == COLUMNS
    assert runs.run.nunique() == len(files) == 40
    assert set(runs.cell) == {"nothing · off", "nothing · high", "rule · off", "rule · high"}
    assert set(runs.status) == {"valid"} and set(runs.task) == {""}
    contract = runs[runs.role == "contract"]
    # Every run has a row for every contract metric, once.
    assert len(contract) == 40 * len(CONTRACT)
    assert not contract.duplicated(["run", "metric"]).any()
    for run, data in files.items():
        rows = runs[runs.run == run]
        assert set(rows.rep) == {data["rep"]} and set(rows.cell) == {data["cell"]}
        by_role = {
            role: dict(zip(part.metric, part.value, strict=True))
            for role, part in rows.groupby("role")
        }
        assert by_role["contract"] == {m: data["metrics"].get(m) for m in CONTRACT}
        assert by_role["extra"] == data["extra"]
        builtin = data["builtin"]
        for measure in ("turns", "tool_calls", "input_tokens", "output_tokens", "cost_usd"):
            assert by_role["builtin"][measure] == builtin[measure], (run, measure)
        assert by_role["builtin"]["duration_s"] == builtin["duration_s"]
        # The structures stay in measures.json; each brick's use is a metric of its own.
        assert "brick_usage" not in by_role["builtin"] and "bricks_used" not in by_role["builtin"]
        for brick, used in builtin["bricks_used"].items():
            assert by_role["builtin"][f"bricks_used.{brick}"] == used
        pending = rows[rows.pending].metric.tolist()
        assert pending == data["pending"]


def test_failed_and_invalid_runs_keep_their_status_and_built_in_measures(tmp_path):
    folder = demo_copy(tmp_path)
    failed = folder / "runs" / "rule-off" / "r03" / "measures.json"
    data = json.loads(failed.read_text())
    data.update(status="failed", metrics={}, extra={}, pending=[], problems=["timeout"])
    failed.write_text(json.dumps(data))
    invalid = folder / "runs" / "nothing-high" / "r07" / "measures.json"
    data = json.loads(invalid.read_text())
    data.update(status="invalid", problems=["validator tests: could not score the run"])
    invalid.write_text(json.dumps(data))

    runs = agentab.read_results(folder)
    statuses = runs.drop_duplicates("run").set_index("run").status
    assert statuses["rule-off/r03"] == "failed" and statuses["nothing-high/r07"] == "invalid"
    assert (statuses == "valid").sum() == 38
    rows = runs[runs.run == "rule-off/r03"]
    assert rows[rows.role == "contract"].value.isna().all()
    assert rows[rows.role == "contract"].metric.tolist() == CONTRACT
    assert rows[(rows.role == "builtin") & (rows.metric == "turns")].value.item() == 4


def test_an_unreadable_measures_file_is_left_out_with_a_warning_naming_it(tmp_path):
    folder = demo_copy(tmp_path)
    bad = folder / "runs" / "rule-high" / "r05" / "measures.json"
    bad.write_text("{not json")
    with pytest.warns(UserWarning, match=re.escape(str(bad))):
        runs = agentab.read_results(folder)
    assert runs.run.nunique() == 39 and "rule-high/r05" not in set(runs.run)


def test_a_folder_without_its_frozen_scenario_is_an_agentab_error(tmp_path):
    (tmp_path / "runs").mkdir()
    with pytest.raises(agentab.AgentabError, match="scenario.toml.*frozen scenario is missing"):
        agentab.read_results(tmp_path)
    with pytest.raises(agentab.AgentabError, match="no such results folder"):
        agentab.read_results(tmp_path / "nowhere")


def test_the_public_names_are_the_objects_of_the_modules_that_define_them():
    from agentab.errors import AgentabError
    from agentab.scenario import load_scenario
    from agentab.synthesis.runs.frame import read_results
    from agentab.synthesis.synthesize import synthesize

    assert agentab.load_scenario is load_scenario and agentab.read_results is read_results
    assert agentab.synthesize is synthesize and agentab.AgentabError is AgentabError
    assert set(agentab.__all__) <= set(dir(agentab))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        agentab.nothing_here  # noqa: B018


def test_import_agentab_loads_neither_pandas_nor_the_synthesis():
    # Every `python -m agentab.steps.<step>` imports agentab's __init__ first.
    code = (
        "import sys, agentab\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('pandas', 'numpy')"
        " or m.startswith(('agentab.synthesis', 'agentab.scenario'))]\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def page_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block of a page, in order."""
    return re.findall(r"^```(\w*)\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def test_the_worked_example_of_docs_api_md_prints_what_the_page_shows(tmp_path):
    blocks = page_blocks(API_PAGE.read_text(encoding="utf-8"))
    pairs = [
        (code, blocks[i + 1][1])
        for i, (language, code) in enumerate(blocks)
        if language == "python" and i + 1 < len(blocks) and blocks[i + 1][0] == "text"
    ]
    assert len(pairs) == 2  # the page's two examples, each followed by what it prints
    demo_copy(tmp_path)
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    marker = "----- next example -----"
    script = f"\nprint({marker!r})\n".join(code for code, _ in pairs)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout.split(marker + "\n")
    assert printed == [shown for _, shown in pairs]
    assert (tmp_path / "results" / "demo" / "synthesis.md").is_file()  # synthesize wrote it


def test_the_error_docs_api_md_shows_is_the_one_a_newer_file_raises(tmp_path, monkeypatch):
    shown = [code for language, code in page_blocks(API_PAGE.read_text()) if language == ""]
    assert len(shown) == 1
    folder = demo_copy(tmp_path)
    path = folder / "runs" / "rule-off" / "r01" / "measures.json"
    data = json.loads(path.read_text())
    data["schema_version"] = 2
    path.write_text(json.dumps(data))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(agentab.AgentabError) as raised:
        agentab.read_results("results/demo")
    assert str(raised.value) + "\n" == shown[0]
