"""The measures files read ahead by a forked process: what the synthesis gets is what it would
have read itself, whatever happens to that process."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from agentab.synthesis.runs import read_ahead
from agentab.synthesis.runs.results import read_all_runs

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the read-ahead forks")


class _Scenario:
    """What read_all_runs asks of a scenario."""

    def __init__(self, cells):
        self.cells = cells
        self.tasks = []


class _Cell:
    def __init__(self, name):
        self.name = name
        self.slug = name


@pytest.fixture
def forking(monkeypatch):
    """A fork even where an earlier test left a thread behind (the child only reads files)."""
    monkeypatch.setattr(read_ahead, "can_fork", lambda: True)


def a_results_folder(root: Path) -> Path:
    """A good run, a folder named measures.json, bytes that are not UTF-8, JSON cut short, a
    run folder holding nothing, and a hidden folder."""
    runs = root / "runs" / "a"
    for rep in range(1, 6):
        (runs / f"r{rep:02d}").mkdir(parents=True)
    measures = {"cell": "a", "rep": 1, "status": "valid", "metrics": {"passes": True}}
    (runs / "r01" / "measures.json").write_text(json.dumps(measures))
    (runs / "r02" / "measures.json").mkdir()
    (runs / "r03" / "measures.json").write_bytes(b'{"cell": "\xff"}')
    (runs / "r04" / "measures.json").write_text('{"cell": "a", ')
    (root / "runs" / ".hidden" / "r01").mkdir(parents=True)
    return root


def read_both_ways(folder: Path):
    scenario = _Scenario([_Cell("a")])
    ahead = read_ahead.start(folder)
    try:
        early = read_all_runs(folder, scenario, ahead.files())
    finally:
        ahead.close()
    return early, read_all_runs(folder, scenario)


def test_the_files_read_ahead_give_the_runs_and_the_problems_read_here(tmp_path, forking) -> None:
    folder = a_results_folder(tmp_path)
    ahead = read_ahead.start(folder)
    assert ahead.pid is not None  # a process was forked
    ahead.close()
    early, here = read_both_ways(folder)
    assert early == here
    runs, bad, present = early
    assert [run.rep for run in runs] == [1]
    assert [item.path for item in bad] == [f"runs/a/r0{rep}/measures.json" for rep in (2, 3, 4)]
    assert "Is a directory" in bad[0].message and str(folder) in bad[0].message
    assert present == {f"runs/a/r0{rep}" for rep in (1, 2, 3, 4)}


def test_a_process_that_fails_leaves_the_reading_to_the_synthesis(
    tmp_path, monkeypatch, forking
) -> None:
    folder = a_results_folder(tmp_path)
    parent = os.getpid()
    real = read_ahead.read_measures_files

    def failing_in_the_child(runs_root):
        if os.getpid() != parent:
            raise MemoryError("the child ran out")
        return real(runs_root)

    monkeypatch.setattr(read_ahead, "read_measures_files", failing_in_the_child)
    ahead = read_ahead.start(folder)
    assert ahead.pid is not None
    assert ahead._collect() is None  # the child's exit status says it failed
    early, here = read_both_ways(folder)
    assert early == here


def test_a_reading_never_asked_for_ends_with_its_process(tmp_path, forking) -> None:
    """More than a pipe holds: the process waits to write until the pipe is closed."""
    folder = a_results_folder(tmp_path)
    (folder / "runs" / "a" / "r05" / "measures.json").write_bytes(b" " * (8 << 20))
    ahead = read_ahead.start(folder)
    pid = ahead.pid
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("close() waited forever"))
    signal.alarm(20)
    try:
        ahead.close()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    with pytest.raises(ChildProcessError):  # reaped: no process left behind
        os.waitpid(pid, os.WNOHANG)
    ahead.close()  # twice is harmless


def test_with_another_thread_running_nothing_is_forked(tmp_path) -> None:
    folder = a_results_folder(tmp_path)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        ahead = read_ahead.start(folder)
    finally:
        stop.set()
        other.join()
    assert ahead.pid is None
    assert ahead.files() == read_ahead.read_measures_files(str(folder / "runs"))


def test_the_command_reads_ahead_and_writes_the_bytes_it_wrote(tmp_path) -> None:
    """`agentab synthesize` in a fresh interpreter (one thread: the fork is taken) writes the
    recorded outputs of the demo's results, measures.csv by the reading process."""
    import subprocess
    import sys

    from tests.unit import test_synthesis_outputs as recorded_outputs

    folder = recorded_outputs.demo(tmp_path / "demo")
    code = (
        "import sys\n"
        "from agentab.synthesis.runs import read_ahead\n"
        "real = read_ahead.start\n"
        "def start(results_dir, then=None):\n"
        "    ahead = real(results_dir, then)\n"
        "    assert ahead.pid is not None and ahead.follows, 'no process writes measures.csv'\n"
        "    return ahead\n"
        "read_ahead.start = start\n"
        "from agentab.cli import main\n"
        "sys.exit(main(['synthesize', sys.argv[1]]))\n"
    )
    before = set(recorded_outputs.outputs(folder))
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    found = {rel: sha for rel, sha in recorded_outputs.outputs(folder).items() if rel not in before}
    machines = recorded_outputs.recorded()
    here = recorded_outputs.float_math()
    candidates = [machines[here]] if here in machines else list(machines.values())
    assert any(not recorded_outputs.changed_outputs(m["demo"], found) for m in candidates)


def test_a_task_after_the_files_runs_in_the_process_once_they_are_sent(tmp_path, forking) -> None:
    folder = a_results_folder(tmp_path)
    marker = tmp_path / "then.json"

    def then(files):
        marker.write_text(json.dumps([[slug, rep, os.getpid()] for slug, rep, _ in files]))

    ahead = read_ahead.start(folder, then)
    files = ahead.files()
    assert ahead.followed()
    written = json.loads(marker.read_text())
    assert [(slug, rep) for slug, rep, _ in written] == [(slug, rep) for slug, rep, _ in files]
    assert {pid for _, _, pid in written} == {written[0][2]} and written[0][2] != os.getpid()
    assert files == read_ahead.read_measures_files(str(folder / "runs"))
    ahead.close()


def test_a_task_that_fails_or_is_killed_is_not_followed(tmp_path, forking, capfd) -> None:
    folder = a_results_folder(tmp_path)

    def failing(files):
        print("the task talks", flush=True)
        raise OSError(28, "No space left on device")

    ahead = read_ahead.start(folder, failing)
    assert ahead.files() == read_ahead.read_measures_files(str(folder / "runs"))
    assert not ahead.followed()
    assert "the task talks" not in capfd.readouterr().out  # its words are the synthesis's
    previous = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("close() waited for the task"))
    slow = read_ahead.start(folder, lambda files: time.sleep(60))
    slow.files()
    pid = slow.pid
    signal.alarm(20)
    try:
        slow.close()  # the synthesis failed: the task is no longer wanted
    finally:
        signal.alarm(0)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert not slow.followed()
    # Files never taken: a reading that fits in the pipe goes on to its task; close() ends it.
    unasked = read_ahead.start(folder, lambda files: time.sleep(60))
    time.sleep(0.5)  # the files sent, the task under way
    pid = unasked.pid
    signal.alarm(20)
    try:
        unasked.close()
    finally:
        signal.alarm(0)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    signal.signal(signal.SIGALRM, previous)


def test_when_the_reading_process_cannot_write_measures_csv_the_synthesis_does(
    tmp_path, forking
) -> None:
    from agentab.synthesis.synthesize import synthesize
    from tests.unit import test_synthesis_outputs as recorded_outputs

    expected_folder = recorded_outputs.demo(tmp_path / "expected")
    synthesize(expected_folder)
    folder = recorded_outputs.demo(tmp_path / "demo")
    ahead = read_ahead.start(folder, lambda files: os._exit(3))
    try:
        synthesize(folder, ahead)
    finally:
        ahead.close()
    written = (folder / "measures.csv").read_bytes()
    assert written == (expected_folder / "measures.csv").read_bytes()
    assert written.count(b"\n") > 10
