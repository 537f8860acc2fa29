"""The runner files every scenario protects hold every configuration file the pinned pytest
reads: pytest itself is asked which file it takes, for each name a configuration could have."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentab.etalon.protect import RUNNER_FILES, effective_protect, is_protected

STEMS = ("pytest", ".pytest", "tox", "setup", "pyproject", "conftest")
SUFFIXES = (".ini", ".cfg", ".toml", "")
# What a file of each kind says to be pytest's configuration, one way per attempt.
SECTIONS = {
    ".toml": ("[pytest]\n", "[tool.pytest]\n", "[tool.pytest.ini_options]\n"),
    "": ("[pytest]\n", "[tool:pytest]\n"),
}
INI_SECTIONS = ("[pytest]\n", "[tool:pytest]\n")

# One interpreter asks pytest of every candidate: `Config.inipath` is the file it took.
ASK = """
import json, sys, pytest
found = {}
class Record:
    def pytest_configure(self, config):
        found[sys.argv[-1]] = config.inipath.name if config.inipath else None
for folder in json.loads(sys.argv[1]):
    sys.argv.append(folder)
    try:
        pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", folder],
                    plugins=[Record()])
    except BaseException as refused:  # it read the file, and refused what it holds
        found[folder] = "refused: " + str(refused)
    sys.argv.pop()
print(json.dumps(found))
"""


def candidates(root: Path) -> dict[str, str]:
    """A folder per (name, content), each holding that file alone and one test: folder -> name."""
    made = {}
    for stem in STEMS:
        for suffix in SUFFIXES:
            name = stem + suffix
            for number, text in enumerate(SECTIONS.get(suffix, INI_SECTIONS)):
                folder = root / f"{len(made):03d}-{number}"
                folder.mkdir()
                (folder / name).write_text(
                    text + 'python_files = ["check_*.py"]\n'
                    if suffix == ".toml"
                    else text + "python_files = check_*.py\n"
                )
                (folder / "check_one.py").write_text("def test_one():\n    pass\n")
                made[str(folder)] = name
    return made


def read_by_pytest(tmp_path: Path) -> set[str]:
    made = candidates(tmp_path)
    asked = subprocess.run(
        [sys.executable, "-c", ASK, json.dumps(sorted(made))],
        capture_output=True, text=True, check=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    taken = json.loads(asked.stdout.strip().splitlines()[-1])
    assert set(taken) == set(made), "pytest was not asked about every candidate"
    # A file pytest read and refused (`[pytest]` in setup.cfg) was read all the same.
    return {
        made[folder]
        for folder, name in taken.items()
        if name == made[folder] or (name or "").startswith("refused: ") and made[folder] in name
    }


@pytest.mark.slow  # pytest configured once per candidate file: about 10 s
def test_every_configuration_file_pytest_reads_is_a_runner_file(tmp_path):
    read = read_by_pytest(tmp_path)
    # Positive controls: the asking works (these are pytest's files in every version).
    assert {"pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"} <= read
    # Negative control: a name pytest does not read is not reported as read.
    assert "pytest.cfg" not in read and "conftest.toml" not in read
    protected = effective_protect([])
    unprotected = [
        name
        for name in sorted(read)
        if not (is_protected(name, protected) and is_protected(f"pkg/{name}", protected))
    ]
    assert unprotected == [], f"pytest reads {unprotected}, missing from RUNNER_FILES"


def test_pytest_9s_own_files_are_runner_files():
    assert {"pytest.toml", ".pytest.toml"} <= set(RUNNER_FILES)
