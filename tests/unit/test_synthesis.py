"""The synthesis rebuilt from a frozen scenario and measures.json files alone."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentab import stats
from agentab.errors import AgentabError
from agentab.synthesis.runs.results import RunRecord
from agentab.synthesis.synthesize import synthesize
from agentab.synthesis.tables import MEASURES_COLUMNS, json_text, measures_lines

FROZEN_SCENARIO = """\
[scenario]
name = "tests-rule"
question = "Does a one-line rule make the agent run the tests?"

[task]
prompt = "Fix mean in calc.py."

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

[protocol.limits]
memory = "2G"
processes = 256
disk = "1G"
patch = "1M"

[axes]
context = {context}
{deltas}
[validation]
metrics = {metrics}

[validators.tests]
mode = "script"
run = ["validators/tests.py"]
"""

RULE_DELTA = """
[deltas.context.rule]
context_files = ["bricks/run-tests.md"]
"""

SLUGS = {"nothing": "nothing", "rule": "rule"}


def write_scenario(folder: Path, *, repetitions=10, cells=("nothing", "rule"), metrics=None):
    metrics = metrics or ["ran_tests", "turns"]
    folder.mkdir(parents=True, exist_ok=True)
    text = FROZEN_SCENARIO.format(
        repetitions=repetitions,
        context=json.dumps(list(cells)),
        metrics=json.dumps(metrics),
        deltas=RULE_DELTA if "rule" in cells else "",
    )
    (folder / "scenario.toml").write_text(text, encoding="utf-8")
    return folder


def write_run(folder: Path, cell: str, rep: int, metrics: dict, status="valid", **fields):
    run_dir = folder / "runs" / SLUGS[cell] / f"r{rep:02d}"
    run_dir.mkdir(parents=True, exist_ok=True)
    measures = {
        "schema": 1,
        "scenario": "tests-rule",
        "cell": cell,
        "rep": rep,
        "run": f"{SLUGS[cell]}/r{rep:02d}",
        "status": status,
        "metrics": metrics,
        "extra": fields.get("extra", {}),
        "reasons": {},
        "problems": fields.get("problems", []),
        "pending": fields.get("pending", []),
        "provenance": {
            "etalon_sha": "0123abc",
            "harness": "pi",
            "harness_version": "1.6.0",
            "provider": "offline",
            "model": "demo",
            "thinking": "off",
            "duration_s": 10.0,
            "tokens": {"input": 100, "output": 20},
            "cost_usd": 0.0,
        },
    }
    (run_dir / "measures.json").write_text(json.dumps(measures), encoding="utf-8")
    return run_dir


def write_clear_effect(folder: Path, repetitions=10):
    write_scenario(folder, repetitions=repetitions)
    for rep in range(1, repetitions + 1):
        write_run(folder, "nothing", rep, {"ran_tests": rep <= 2, "turns": 5 + rep % 3})
        write_run(
            folder,
            "rule",
            rep,
            {"ran_tests": rep <= 9, "turns": 6 + rep % 3},
            extra={"lint_warnings": rep},
        )
    return folder


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_a_clear_effect_is_established_and_written_everywhere(tmp_path):
    result = synthesize(write_clear_effect(tmp_path / "results"))
    gaps = {row["metric"]: row for row in read_csv(tmp_path / "results" / "gaps.csv")}
    assert gaps["ran_tests"]["verdict"] == "established"
    assert gaps["ran_tests"]["value_cell"] == "0.9"
    assert gaps["ran_tests"]["value_ref"] == "0.2"
    assert float(gaps["ran_tests"]["gap"]) == pytest.approx(0.7)
    assert gaps["ran_tests"]["reference"] == "nothing"
    assert [gap.metric for gap in result.established] == ["ran_tests"]
    for name in ("cells.csv", "gaps.csv", "measures.csv", "gaps.svg", "synthesis.md"):
        assert (tmp_path / "results" / name).stat().st_size > 0
    report = (tmp_path / "results" / "synthesis.md").read_text(encoding="utf-8")
    assert "Does a one-line rule make the agent run the tests?" in report
    assert "9/10 (90%)" in report
    assert "In `rule`, the rate of `ran_tests` is higher than in `nothing`" in report


def test_the_reading_states_only_established_gaps(tmp_path):
    synthesize(write_clear_effect(tmp_path / "results"))
    report = (tmp_path / "results" / "synthesis.md").read_text(encoding="utf-8")
    reading = report.split("## Answer", 1)[1].split("Reference cell:", 1)[0]
    assert "ran_tests" in reading
    assert "`turns`" not in reading


def test_cells_csv_holds_rates_as_proportions_and_medians_with_their_iqr(tmp_path):
    synthesize(write_clear_effect(tmp_path / "results"))
    rows = {(r["cell"], r["metric"]): r for r in read_csv(tmp_path / "results" / "cells.csv")}
    assert rows["rule", "ran_tests"]["type"] == "rate"
    assert (rows["rule", "ran_tests"]["k"], rows["rule", "ran_tests"]["n"]) == ("9", "10")
    assert rows["rule", "ran_tests"]["dispersion"] == "wilson95"
    turns = rows["nothing", "turns"]
    assert (turns["type"], turns["value"], turns["dispersion"]) == ("median", "6.0", "iqr")


def test_the_csvs_are_the_same_bytes_twice(tmp_path):
    folder = write_clear_effect(tmp_path / "results")
    synthesize(folder)
    first = {
        name: (folder / name).read_bytes()
        for name in ("cells.csv", "gaps.csv", "measures.csv", "gaps.svg")
    }
    synthesize(folder)
    for name, content in first.items():
        assert (folder / name).read_bytes() == content, name


def test_a_copy_in_another_folder_gives_the_same_csvs(tmp_path):
    one = write_clear_effect(tmp_path / "one")
    two = write_clear_effect(tmp_path / "elsewhere" / "two")
    synthesize(one)
    synthesize(two)
    for name in ("cells.csv", "gaps.csv"):
        assert (one / name).read_bytes() == (two / name).read_bytes()


def test_a_partial_folder_lists_the_missing_runs_and_counts_the_rest(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=3)
    write_run(folder, "nothing", 1, {"ran_tests": False, "turns": 4})
    write_run(folder, "nothing", 3, {"ran_tests": True, "turns": 5})
    write_run(folder, "rule", 2, {"ran_tests": True, "turns": 5})
    result = synthesize(folder)
    assert [(m.cell, m.rep, m.path) for m in result.missing] == [
        ("nothing", 2, "runs/nothing/r02"),
        ("rule", 1, "runs/rule/r01"),
        ("rule", 3, "runs/rule/r03"),
    ]
    report = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "`runs/rule/r03`" in report
    assert len(result.gaps) == 2


def test_a_bad_measures_file_is_reported_with_its_path_and_the_others_still_count(tmp_path):
    folder = write_clear_effect(tmp_path / "results")
    broken = folder / "runs" / "rule" / "r04" / "measures.json"
    broken.write_text("{not json", encoding="utf-8")
    wrong_cell = write_run(folder, "rule", 5, {"ran_tests": True, "turns": 6}) / "measures.json"
    data = json.loads(wrong_cell.read_text())
    wrong_cell.write_text(json.dumps(data | {"cell": "no such cell"}), encoding="utf-8")
    result = synthesize(folder)
    paths = {bad.path: bad.message for bad in result.bad_files}
    assert set(paths) == {"runs/rule/r04/measures.json", "runs/rule/r05/measures.json"}
    assert "not valid JSON" in paths["runs/rule/r04/measures.json"]
    assert "no such cell" in paths["runs/rule/r05/measures.json"]
    assert not result.missing  # present but unreadable is not the same as missing
    cells = {(r["cell"], r["metric"]): r for r in read_csv(folder / "cells.csv")}
    assert cells["rule", "ran_tests"]["n"] == "8"
    assert "runs/rule/r04/measures.json" in (folder / "synthesis.md").read_text(encoding="utf-8")


def test_a_measures_file_in_the_wrong_folder_is_reported(tmp_path):
    folder = write_clear_effect(tmp_path / "results", repetitions=2)
    path = folder / "runs" / "rule" / "r02" / "measures.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"rep": 1}), encoding="utf-8")
    result = synthesize(folder)
    assert [bad.path for bad in result.bad_files] == ["runs/rule/r02/measures.json"]
    assert "runs/rule/r01" in result.bad_files[0].message


def test_a_single_cell_scenario_is_an_isolated_measurement(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=4, cells=("nothing",))
    for rep in range(1, 5):
        write_run(folder, "nothing", rep, {"ran_tests": rep % 2 == 0, "turns": rep})
    result = synthesize(folder)
    assert result.gaps == []
    assert read_csv(folder / "gaps.csv") == []
    cells = {r["metric"]: r for r in read_csv(folder / "cells.csv")}
    assert cells["turns"]["value"] == "2.5"
    assert (cells["turns"]["dispersion_low"], cells["turns"]["dispersion_high"]) == ("1.75", "3.25")
    assert cells["ran_tests"]["note"].startswith("isolated")
    report = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "## Isolated measurements" in report
    assert "Wilson 95% interval" in report


def test_a_metric_the_reference_lacks_is_isolated_and_outside_the_holm_family(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=3, metrics=["ran_tests", "turns"])
    for rep in range(1, 4):
        write_run(folder, "nothing", rep, {"ran_tests": False}, pending=["turns"])
        write_run(folder, "rule", rep, {"ran_tests": True, "turns": rep})
    result = synthesize(folder)
    assert [gap.metric for gap in result.gaps] == ["ran_tests"]
    cells = {(r["cell"], r["metric"]): r for r in read_csv(folder / "cells.csv")}
    assert cells["rule", "turns"]["note"].startswith("isolated")
    assert cells["nothing", "turns"]["pending"] == "3"
    report = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "`turns`: 3 runs" in report


def test_mixed_types_make_a_metric_diagnostic_with_a_note_not_a_crash(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=2)
    write_run(folder, "nothing", 1, {"ran_tests": True, "turns": 3})
    write_run(folder, "nothing", 2, {"ran_tests": False, "turns": "three"})
    write_run(folder, "rule", 1, {"ran_tests": True, "turns": 4})
    write_run(folder, "rule", 2, {"ran_tests": True, "turns": 5})
    result = synthesize(folder)
    assert result.metric_types["turns"].kind == "diagnostic"
    assert [gap.metric for gap in result.gaps] == ["ran_tests"]
    report = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "`turns` is diagnostic (mixed value types across runs: number, other)" in report


def test_an_integer_beyond_any_float_makes_a_metric_diagnostic_not_a_crash(tmp_path):
    """A script validator prints what the agent's code computes: 400 nines parse as a Python
    int that no float holds. It is kept in measures.csv, never turned into a median."""
    folder = write_scenario(tmp_path / "results", repetitions=2)
    write_run(folder, "nothing", 1, {"ran_tests": True, "turns": 3})
    write_run(folder, "nothing", 2, {"ran_tests": False, "turns": int("9" * 400)})
    write_run(folder, "rule", 1, {"ran_tests": True, "turns": 4})
    write_run(folder, "rule", 2, {"ran_tests": True, "turns": 5})
    result = synthesize(folder)
    assert result.metric_types["turns"].kind == "diagnostic"
    assert [gap.metric for gap in result.gaps] == ["ran_tests"]
    report = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "`turns` is diagnostic (mixed value types across runs: number, other)" in report
    assert "9" * 400 in (folder / "measures.csv").read_text(encoding="utf-8")


def test_invalid_and_failed_runs_are_counted_with_their_reasons_and_not_scored(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=3)
    write_run(folder, "nothing", 1, {"ran_tests": False, "turns": 3})
    write_run(folder, "nothing", 2, {}, status="failed", problems=["timeout after 120 s"])
    write_run(
        folder,
        "nothing",
        3,
        {"ran_tests": True},
        status="invalid",
        problems=["validator tests: exit 1"],
    )
    for rep in range(1, 4):
        write_run(folder, "rule", rep, {"ran_tests": True, "turns": 4})
    result = synthesize(folder)
    assert result.status_counts() == {"valid": 4, "failed": 1, "invalid": 1}
    cells = {(r["cell"], r["metric"]): r for r in read_csv(folder / "cells.csv")}
    assert cells["nothing", "ran_tests"]["n"] == "1"
    report = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "1 × timeout after 120 s (nothing/r02)" in report
    assert "1 × validator tests: exit 1 (nothing/r03)" in report


def test_measures_csv_has_a_row_per_run_and_metric_with_extras_unscored(tmp_path):
    folder = write_clear_effect(tmp_path / "results", repetitions=2)
    synthesize(folder)
    rows = read_csv(folder / "measures.csv")
    assert len(rows) == 2 * 2 * 2 + 2  # runs x contract metrics, plus the rule cell's extra
    extra = [row for row in rows if row["role"] == "extra"]
    assert {(row["cell"], row["metric"], row["value"]) for row in extra} == {
        ("rule", "lint_warnings", "1"),
        ("rule", "lint_warnings", "2"),
    }
    assert rows[0] == {
        "cell": "nothing",
        "rep": "1",
        "run": "nothing/r01",
        "status": "valid",
        "metric": "ran_tests",
        "role": "contract",
        "value": "true",
        "pending": "false",
    }


def test_holm_is_applied_over_every_gap_of_the_table(tmp_path):
    folder = write_clear_effect(tmp_path / "results")
    synthesize(folder)
    gaps = read_csv(folder / "gaps.csv")
    assert len(gaps) == 2
    smaller = min(gaps, key=lambda row: float(row["p"]))
    assert float(smaller["p_holm"]) == min(1.0, 2 * float(smaller["p"]))


def test_a_folder_without_a_frozen_scenario_is_a_clear_error(tmp_path):
    with pytest.raises(AgentabError, match="scenario.toml"):
        synthesize(tmp_path)


def test_a_folder_that_does_not_exist_is_a_clear_error(tmp_path):
    with pytest.raises(AgentabError, match="no such results folder"):
        synthesize(tmp_path / "nowhere")


def test_a_metric_pending_everywhere_reads_as_pending_not_as_diagnostic(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=2)
    for rep in (1, 2):
        write_run(folder, "nothing", rep, {"ran_tests": False}, pending=["turns"])
        write_run(folder, "rule", rep, {"ran_tests": True}, pending=["turns"])
    result = synthesize(folder)
    assert [gap.metric for gap in result.gaps] == ["ran_tests"]
    cells = {(r["cell"], r["metric"]): r for r in read_csv(folder / "cells.csv")}
    assert cells["rule", "turns"]["pending"] == "2"
    assert cells["rule", "turns"]["note"].startswith("no value yet: pending a human form")
    report = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "pending (2 runs)" in report
    assert "`turns` is diagnostic" not in report
    assert "`turns`: 4 runs of 4 valid" in report


def test_the_report_writes_rates_as_k_of_n_and_a_zero_gap_as_zero(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=4)
    for rep in range(1, 5):
        write_run(folder, "nothing", rep, {"ran_tests": rep <= 2, "turns": 4})
        write_run(folder, "rule", rep, {"ran_tests": rep <= 2, "turns": 4})
    synthesize(folder)
    report = (folder / "synthesis.md").read_text(encoding="utf-8")
    assert "| rule | ran_tests | 2/4 (50%) | 2/4 (50%) | 0 pp |" in report
    assert "+0" not in report and "-0 " not in report


def test_the_reading_gives_both_counts_of_an_established_rate(tmp_path):
    synthesize(write_clear_effect(tmp_path / "results"))
    reading = (tmp_path / "results" / "synthesis.md").read_text(encoding="utf-8")
    assert "9/10 runs against 2/10, a gap of +70 pp" in reading.split("## Answer", 1)[1]


def test_a_run_folder_without_measures_is_missing_and_hidden_folders_are_ignored(tmp_path):
    folder = write_clear_effect(tmp_path / "results", repetitions=2)
    (folder / "runs" / "rule" / "r02" / "measures.json").unlink()
    (folder / "runs" / ".trash" / "r01").mkdir(parents=True)
    (folder / "runs" / ".trash" / "r01" / "measures.json").write_text("{}", encoding="utf-8")
    result = synthesize(folder)
    assert [missing.path for missing in result.missing] == ["runs/rule/r02"]
    assert result.bad_files == []


@pytest.mark.parametrize("repetitions", [1, 2, 8])
def test_no_gap_is_established_from_fewer_runs_than_the_minimum(tmp_path, repetitions):
    # One run each: "ran_tests" 1/1 against 0/1, an interval [+100, +100] of no spread.
    folder = write_scenario(tmp_path / "results", repetitions=repetitions)
    for rep in range(1, repetitions + 1):
        write_run(folder, "nothing", rep, {"ran_tests": False, "turns": 5})
        write_run(folder, "rule", rep, {"ran_tests": True, "turns": 9})
    result = synthesize(folder)
    assert result.established == []
    gap = next(gap for gap in result.gaps if gap.metric == "ran_tests")
    assert gap.verdict.ci_low > 0 and "at least 9 per group" in gap.note
    gaps = {row["metric"]: row for row in read_csv(folder / "gaps.csv")}
    assert gaps["ran_tests"]["verdict"] == "inconclusive"
    assert "Inconclusive for want of runs" in (folder / "synthesis.md").read_text("utf-8")


def test_at_the_minimum_the_same_gap_is_established(tmp_path):
    folder = write_scenario(tmp_path / "results", repetitions=stats.MIN_RUNS_PER_GROUP)
    for rep in range(1, stats.MIN_RUNS_PER_GROUP + 1):
        write_run(folder, "nothing", rep, {"ran_tests": False, "turns": 5})
        write_run(folder, "rule", rep, {"ran_tests": True, "turns": 9})
    assert {gap.metric for gap in synthesize(folder).established} == {"ran_tests", "turns"}


awkward_text = st.text(alphabet=st.sampled_from('ab ,"\n\r;é'), max_size=6)
json_values = st.one_of(
    st.booleans(), st.integers(), st.floats(allow_nan=False), awkward_text,
    st.lists(st.integers(), max_size=2), st.none(),
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    cell=awkward_text, run=awkward_text, metrics=st.dictionaries(awkward_text, json_values),
    extra=st.dictionaries(awkward_text, json_values), pending=st.lists(awkward_text, max_size=2),
)  # fmt: skip
def test_measures_csv_lines_read_back_as_written_and_are_the_csv_modules_bytes(
    cell, run, metrics, extra, pending
):
    record = RunRecord(cell, 3, run, "valid", metrics, extra, pending, [], {}, None)
    contract = [*metrics, "absent"]
    rows = [MEASURES_COLUMNS]
    for metric in contract:
        value = json_text(metrics[metric]) if metric in metrics else ""
        flag = "true" if metric in pending else "false"
        rows.append([cell, "3", run, "valid", metric, "contract", value, flag])
    for metric in sorted(extra):
        rows.append([cell, "3", run, "valid", metric, "extra", json_text(extra[metric]), "false"])
    text = "".join(measures_lines([record], contract))
    assert list(csv.reader(io.StringIO(text, newline=""))) == rows
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    # The csv module leaves a lone carriage return unquoted (a reader then splits the row);
    # anything else is written byte for byte as it writes it.
    if "\r" not in text:
        assert text == buffer.getvalue()


def test_a_gap_short_of_runs_says_why_it_is_inconclusive(tmp_path):
    # Three runs a cell: ran_tests 2/3 against 1/3, an interval around 0, and 3 < 9 runs.
    folder = write_scenario(tmp_path / "results", repetitions=3)
    for rep in range(1, 4):
        write_run(folder, "nothing", rep, {"ran_tests": rep == 1, "turns": 5})
        write_run(folder, "rule", rep, {"ran_tests": rep != 1, "turns": 5 + rep})
    synthesize(folder)
    text = (folder / "synthesis.md").read_text("utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| rule | ran_tests |"))
    assert row.endswith("| inconclusive: fewer than 9 valid runs per group |")
    assert (
        "- `rule`, `ran_tests` (+33.3 pp [-33.3, +100] pp): fewer than 9 valid runs per group "
        "(3 and 3 valid runs here): a gap needs at least 9 per group to be established." in text
    )


def test_the_synthesize_command_imports_no_other_command(tmp_path) -> None:
    # What another command needs (the report's HTML, the harnesses, YAML) is not paid for here.
    code = (
        "import sys\n"
        "from agentab.cli import build_parser\n"
        "build_parser(only='synthesize')\n"
        "print(sorted(m for m in sys.modules if m.startswith(('agentab.report', 'agentab.commands.',"
        " 'agentab.harnesses', 'yaml', 'pygments'))))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "['agentab.commands.synthesize']", loaded
