"""There are no environment variables in this tool: no module reads the caller's environment,
and every process agentab starts gets an environment agentab constructed.

Checked on the parsed code, so that `from os import environ`, `os.getenv`, `tempfile`'s
TMPDIR-dependent functions and a subprocess call without `env=` are all caught.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_SOURCES = [
    *ROOT.joinpath("src", "agentab").rglob("*.py"),
    *ROOT.joinpath("scripts").glob("*.py"),
]
WORKFLOW_SOURCES = [ROOT / "Snakefile", *ROOT.joinpath("rules").glob("*.smk")]
# tempfile picks its folder from TMPDIR, TEMP or TMP: a place chosen by the caller's shell.
ENVIRONMENT_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}
TEMPFILE_NAMES = {"gettempdir", "gettempdirb", "mkdtemp", "mkstemp", "TemporaryDirectory",
                  "NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile"}  # fmt: skip
PROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}


def environment_reads(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ENVIRONMENT_NAMES | TEMPFILE_NAMES:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "tempfile"):
            names = {alias.name for alias in node.names}
            if names & (ENVIRONMENT_NAMES | TEMPFILE_NAMES) or "*" in names:
                found.append(f"line {node.lineno}: from {node.module} import {sorted(names)}")
        elif isinstance(node, ast.Import) and any(a.name == "tempfile" for a in node.names):
            found.append(f"line {node.lineno}: import tempfile")
    return found


def processes_without_environment(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in PROCESS_CALLS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "subprocess"
            and not any(keyword.arg == "env" for keyword in node.keywords)
        ):
            found.append(f"line {node.lineno}: subprocess.{node.func.attr} without env=")
    return found


def offenders(check) -> list[str]:
    return [
        f"{path.relative_to(ROOT)} {problem}"
        for path in PYTHON_SOURCES
        for problem in check(ast.parse(path.read_text(), str(path)))
    ]


def test_no_module_reads_the_environment() -> None:
    assert len(PYTHON_SOURCES) > 30
    assert offenders(environment_reads) == []


def test_every_process_gets_a_constructed_environment() -> None:
    assert len(PYTHON_SOURCES) > 30
    assert offenders(processes_without_environment) == []


def test_no_workflow_file_reads_the_environment() -> None:
    pattern = re.compile(r"\benviron\b|getenv\(|tempfile")
    assert len(WORKFLOW_SOURCES) > 5  # the Snakefile and its rules files
    assert [str(p) for p in WORKFLOW_SOURCES if pattern.search(p.read_text())] == []


def test_the_checks_catch_what_they_look_for() -> None:
    caught = (
        "from os import environ\nimport os\nos.getenv('X')\nimport tempfile\n"
        "tempfile.gettempdir()\nimport subprocess\nsubprocess.run(['ls'])\n"
    )
    tree = ast.parse(caught)
    assert len(environment_reads(tree)) == 4
    assert len(processes_without_environment(tree)) == 1
    clean = "import subprocess\nsubprocess.run(['ls'], env={'PATH': '/bin'})\n"
    assert environment_reads(ast.parse(clean)) == []
    assert processes_without_environment(ast.parse(clean)) == []
