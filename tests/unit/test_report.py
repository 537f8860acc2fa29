"""The HTML report of a results folder, built from a small synthetic one."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from agentab.cli import main
from agentab.errors import AgentabError
from agentab.report import build_report, list_runs
from agentab.report.conversation import FOLD_LINES, conversation_from_lines
from agentab.report.sources import load_frozen_scenario
from agentab.synthesis.synthesize import synthesize
from tests.unit.report_folder import LONG_OUTPUT, write_measures, write_results, write_scenario


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = write_results(tmp_path / "results" / "tests-rule")
    synthesize(folder)
    return folder


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)


def links_of(page: Path) -> list[str]:
    parser = Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.links


def receipt_rows(html: str) -> list[list[str]]:
    table = html.split('<table class="receipt">')[1].split("</table>")[0]
    return [
        [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<t[hd]>(.*?)</t[hd]>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", table)
    ]


def text_of(page: Path) -> str:
    return re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8"))


def test_every_link_of_every_page_is_relative_and_reaches_a_file(results: Path) -> None:
    report = build_report(results).report_dir
    pages = sorted(report.rglob("*.html"))
    assert len(pages) == 1 + 2 + 20  # overview, cells, every run (missing and fault included)
    for page in pages:
        for link in links_of(page):
            assert not re.match(r"^[a-z]+:", link), f"{page}: {link} is not a relative link"
            target = (page.parent / unquote(link.split("#")[0])).resolve()
            assert target.exists(), f"{page.relative_to(report)} links {link}, which is not there"


def test_overview_has_question_matrix_verdicts_figure_and_warnings_but_no_run_list(
    results: Path,
) -> None:
    index = build_report(results).index
    text = text_of(index)
    assert "Does a one-line rule make the agent run the tests?" in text
    assert "established" in text and "inconclusive" in text
    links = links_of(index)
    assert "cells/nothing.html" in links and "cells/rule.html" in links
    assert "../gaps.svg" in links
    # the warnings: the invalid run's reason, the fault, the missing run, the pending form
    assert "SyntaxError in tests.py" in text
    assert "provider error 529 overloaded" not in text  # a fault's reason is on its run page
    assert "1 fault" in text and "1 missing" in text
    assert "copy forms/review.blank.toml to forms/review.toml" in text
    # runs are reached through warnings (the first few) and cells, never listed all
    assert "runs/nothing/r03.html" not in links
    assert "runs/rule/r02.html" in links


def test_cell_page_lists_each_of_its_runs_with_status_and_reason(results: Path) -> None:
    build_report(results)
    page = results / "report" / "cells" / "rule.html"
    links = links_of(page)
    # the runs table links every run; the runs behind each rate come before it
    assert [f"../runs/rule/r{rep:02d}.html" for rep in range(1, 11)] == [
        link for link in links if link.startswith("../runs/")
    ][-10:]
    text = text_of(page)
    assert "invalid" in text and "SyntaxError in tests.py" in text
    assert "fault" in text and "provider error 529 overloaded" in text
    assert "ran_tests" in text and "+" in text  # its gap against the reference


def test_run_page_shows_task_conversation_diff_validators_receipt_and_provenance(
    results: Path,
) -> None:
    build_report(results)
    page = results / "report" / "runs" / "rule" / "r01.html"
    html = page.read_text(encoding="utf-8")
    text = text_of(page)
    assert "Fix mean in calc.py." in text
    assert "I fixed mean: it divides by len(values)." in text
    assert "python -m unittest" in text
    # the long, failing output is folded; the short one is not
    assert re.search(r"<details class=\"output error\"><summary>output, 40 lines", html)
    assert "test_39 ... ok" in text
    # the diff is highlighted by pygments: an inserted line has its own class
    assert re.search(r'<span class="gi">\+    return sum\(values\) / len\(values\)', html)
    assert "ran python -m unittest &lt;twice&gt;" in html  # escaped, never raw HTML
    assert receipt_rows(html) == [
        ["brick or setting", "kind", "delivered?", "evidence"],
        ["off", "thinking", "yes", "sent: no reasoning setting; the harness says it applied off"],
        [
            "bricks/run-tests.md",
            "context_files",
            "yes",
            "its text is in the system prompt of request 1",
        ],
    ]
    assert "Treatment delivered: yes, checked over 4 requests that reached the model." in text
    assert "node cli.js --mode json -- &#39;Fix mean in calc.py.&#39;" in html
    assert "the offline model costs nothing" in text
    for raw in ("measures.json", "transcript.jsonl", "result.patch", "validators/tests.json"):
        assert f"../../../runs/rule/r01/{raw}" in links_of(page)


def test_run_pages_of_runs_without_files_say_what_is_missing(results: Path) -> None:
    build_report(results)
    fault = text_of(results / "report" / "runs" / "rule" / "r10.html")
    assert "provider error 529 overloaded" in fault
    assert "No transcript.jsonl" in fault and "No result.patch" in fault
    missing = text_of(results / "report" / "runs" / "nothing" / "r10.html")
    assert "missing" in missing and "no measures.json yet" in missing


def test_a_rebuild_replaces_the_whole_report(results: Path) -> None:
    report = build_report(results).report_dir
    stale = report / "runs" / "gone" / "r01.html"
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    build_report(results)
    assert not stale.exists()
    assert not (results / ".report.partial").exists()


def test_the_report_of_a_partial_folder_without_synthesis_still_builds(tmp_path: Path) -> None:
    folder = write_scenario(tmp_path / "partial", repetitions=2)
    write_measures(folder, "nothing", 1, {"ran_tests": False, "turns": 4})
    index = build_report(folder).index
    assert "../gaps.svg" not in links_of(index)  # no figure yet: no broken image
    assert "3 missing" in text_of(index)


def test_list_runs_says_what_became_of_every_run(results: Path) -> None:
    (results / "runs" / "nothing" / "r09" / "measures.json").write_text("{not json")
    entries = {e.run: e for e in list_runs(results, load_frozen_scenario(results))}
    assert len(entries) == 20
    assert entries["nothing/r01"].status == "valid"
    assert entries["nothing/r01"].reason == "pending a form: readable"
    assert entries["rule/r02"].status == "invalid"
    assert entries["rule/r10"].status == "fault"
    assert entries["rule/r10"].reason == "provider error 529 overloaded"
    assert entries["nothing/r10"].status == "missing"
    assert entries["nothing/r09"].status == "unreadable"


def test_conversation_pairs_calls_with_results_and_folds_long_output() -> None:
    lines = [
        '{"type": "message", "role": "assistant", "text": "t", "tool_calls": '
        '[{"id": "a", "tool": "bash", "kind": "run", "input": {}, "command": "ls"}]}',
        json.dumps(
            {"type": "tool_result", "id": "a", "tool": "bash", "output": LONG_OUTPUT, "is_error": 0}
        ),
        '{"type": "tool_result", "id": "zz", "tool": "read", "output": "x", "is_error": false}',
        "not json",
    ]
    conversation = conversation_from_lines(lines)
    call = conversation.turns[0].calls[0]
    assert call.shown == "ls" and call.output.folded and call.output.lines == 40 > FOLD_LINES
    assert conversation.turns[1].role == "tool"  # a result no call asked for is still shown
    assert len(conversation.problems) == 1


def test_the_report_command(results: Path, capsys) -> None:
    assert main(["report", str(results)]) == 0
    assert "report/index.html (2 cells, 20 runs)" in capsys.readouterr().out


def test_the_report_of_a_folder_that_is_not_one_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AgentabError, match="holds no results: no frozen scenario.toml"):
        build_report(tmp_path)
    assert main(["report", str(tmp_path / "nowhere")]) == 2


def test_a_gap_short_of_runs_says_why_in_the_report(results: Path) -> None:
    # The rule has 8 valid runs: one short of the minimum for a verdict.
    report = build_report(results).report_dir
    for page in (report / "index.html", report / "cells" / "rule.html"):
        assert "inconclusive: fewer than 9 valid runs per group" in text_of(page)


def test_the_cell_page_lists_the_runs_behind_each_rate(results: Path) -> None:
    report = build_report(results).report_dir
    page = report / "cells" / "nothing.html"
    false_runs = ", ".join(f"r{rep:02d}" for rep in range(2, 10))
    assert f"ran_tests: true in 1 (r01); false in 8 ({false_runs})" in text_of(page)
    assert "../runs/nothing/r02.html" in links_of(page)


def test_a_protected_name_with_a_newline_or_bytes_not_utf8_is_one_quoted_name_on_the_page():
    from types import SimpleNamespace

    from agentab.report.run_page import builtin_rows

    record = SimpleNamespace(
        builtin={"protected_edits": 2}, protected_files=["tests/a\nb.py", "tests/bad\udcff.py"]
    )
    ((name, shown),) = builtin_rows(record)
    assert shown == '2 ("tests/a\\nb.py", "tests/bad\\377.py": given back as tagged to validators)'
    shown.encode("utf-8")  # the page is written as UTF-8: a raw surrogate crashed it


def test_the_overview_answers_first_and_keeps_a_pending_form_out_of_the_warnings(
    results: Path,
) -> None:
    html = build_report(results).index.read_text(encoding="utf-8")
    assert html.index('id="answer"') < html.index('id="matrix"') < html.index('id="gaps"')
    assert html.index('id="answer"') < html.index('id="warnings"')
    warnings = html.split('id="warnings"', 1)[1].split("</ul>", 1)[0]
    assert "Pending a form" not in warnings  # information, not a warning
    notes = html.split('id="notes"', 1)[1].split("</ul>", 1)[0]
    assert "copy forms/review.blank.toml to forms/review.toml" in notes
    assert (
        "<code>" in warnings and "`" not in warnings
    )  # a synthesis warning's names as code spans, never raw backticks


def test_code_spans_escape_what_they_do_not_mark() -> None:
    from agentab.report.builder import code_spans

    assert str(code_spans("`a<b>` and <i>")) == "<code>a&lt;b&gt;</code> and &lt;i&gt;"
    assert str(code_spans("one ` alone <x>")) == "one ` alone &lt;x&gt;"


def test_a_page_whose_run_text_holds_a_lone_surrogate_is_written_escaped(tmp_path):
    import jinja2

    from agentab.report.builder import Pages

    pages = Pages(tmp_path)
    pages.environment = jinja2.Environment(loader=jinja2.DictLoader({"t": "{{ said }}"}))
    pages.write("run.html", "t", said="the agent wrote bad\udcff.py")
    assert (tmp_path / "run.html").read_text(encoding="utf-8") == "the agent wrote bad\\udcff.py"


def test_a_valid_run_that_did_badly_shows_its_values_beside_a_neutral_badge(results: Path):
    """ "valid" says a run was scored, not that it went well: the page shows what it scored,
    and the badge is not a success's green."""
    build_report(results)
    page = results / "report" / "runs" / "nothing" / "r02.html"  # ran_tests false
    status = re.search(r'<p class="run-status">(.*?)</p>', page.read_text(encoding="utf-8"))
    assert status is not None
    assert '<span class="status status-valid">valid</span>' in status.group(1)
    assert "Scored: <code>ran_tests = false</code> · <code>turns = 5</code>" in status.group(1)
    css = (results / "report" / "style.css").read_text(encoding="utf-8")
    (valid,) = re.findall(r"\.status-valid \{ background: (#[0-9a-f]+); \}", css)
    assert valid.lower() not in ("#2e7d32", "#388e3c", "#43a047", "#4caf50", "#008000")
    invalid = results / "report" / "runs" / "rule" / "r02.html"
    assert "Scored: <code>" not in invalid.read_text(encoding="utf-8")  # nothing scored
