"""The shared process runner: timeout kills the whole group; a stale twin is ended."""

import json
import subprocess
import sys

import pytest

from agentab.run.process import (
    Cap,
    end_stale_twin,
    group_alive,
    run_process,
    wait_exactly,
    write_lock,
)
from tests.processes import is_running


def run(argv, env, cwd, timeout_s, lock):
    return run_process(
        argv,
        env=env,
        cwd=cwd,
        stdout_path=cwd / "out",
        stderr_path=cwd / "err",
        timeout_s=timeout_s,
        lock_path=lock,
    )


def test_timeout_kills_the_whole_process_group(tmp_path):
    # The child starts a grandchild, then both sleep: only a group kill ends the grandchild.
    # (How long ending the group takes: benchmarks/bench_stopping.py.)
    script = (
        "import os,subprocess,time; open('pgid','w').write(str(os.getpgid(0)));"
        "child = subprocess.Popen(['sleep','60']); open('grandchild','w').write(str(child.pid));"
        "time.sleep(60)"
    )
    lock = tmp_path / "agent.lock"
    result = run([sys.executable, "-c", script], {"PATH": "/usr/bin:/bin"}, tmp_path, 1.0, lock)
    # It returned because of the timeout, the child still sleeping: not because it ended.
    assert result.timed_out and result.exit_code is None
    pgid = int((tmp_path / "pgid").read_text())
    assert not group_alive(pgid)
    assert not is_running(int((tmp_path / "grandchild").read_text()))
    assert not lock.exists()


def test_stdin_is_closed_and_the_environment_is_only_the_constructed_one(tmp_path):
    script = "import os,sys; print(sorted(os.environ)); print(repr(sys.stdin.read()))"
    result = run([sys.executable, "-c", script], {"ONLY": "this"}, tmp_path, 30, tmp_path / "lock")
    assert result.exit_code == 0
    names, stdin = (tmp_path / "out").read_text().splitlines()
    assert [n for n in eval(names) if n != "LC_CTYPE"] == ["ONLY"]
    assert stdin == "''"


def test_a_stale_twin_left_by_a_killed_workflow_is_ended(tmp_path):
    twin = subprocess.Popen(["sleep", "60"], start_new_session=True)
    lock = tmp_path / "agent.lock"
    write_lock(lock, twin.pid)
    assert json.loads(lock.read_text())["pgid"] == twin.pid
    end_stale_twin(lock)
    twin.wait(timeout=10)
    assert not group_alive(twin.pid)
    assert not lock.exists()


def test_a_lock_naming_a_reused_pid_ends_nothing(tmp_path):
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    lock = tmp_path / "agent.lock"
    lock.write_text(json.dumps({"pgid": bystander.pid, "start": "1"}))  # another start time
    try:
        end_stale_twin(lock)
        assert bystander.poll() is None
        assert not lock.exists()
    finally:
        bystander.kill()
        bystander.wait()


def test_a_stale_twins_own_folders_go_with_it_and_no_other(tmp_path):
    twin = subprocess.Popen(["sleep", "60"], start_new_session=True)
    stale, redo = tmp_path / "work" / "stale-attempt", tmp_path / "work" / "the-redo"
    for folder in (stale, redo):
        (folder / "workdir").mkdir(parents=True)
    lock = tmp_path / "validator.lock"
    write_lock(lock, twin.pid, [stale])
    end_stale_twin(lock)
    twin.wait(timeout=10)
    assert not stale.exists()
    assert (redo / "workdir").is_dir()


def test_the_exact_wait_gives_the_exit_code_or_times_out():
    ended = subprocess.Popen(["sh", "-c", "exit 7"])
    assert wait_exactly(ended, 30) == 7
    sleeping = subprocess.Popen(["sleep", "30"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            wait_exactly(sleeping, 0.1)
    finally:
        sleeping.kill()
        sleeping.wait()


def test_an_output_is_capped_as_it_arrives_its_head_and_tail_kept(tmp_path):
    lock = tmp_path / "lock"
    script = "import sys; sys.stdout.write('H' * 1000 + 'x' * 5_000_000 + 'T' * 1000)"
    result = run_process(
        [sys.executable, "-c", script],
        env={},
        cwd=tmp_path,
        stdout_path=tmp_path / "out",
        stderr_path=tmp_path / "err",
        timeout_s=30,
        lock_path=lock,
        caps=(Cap(1000, 1000), Cap(10)),
    )
    kept = (tmp_path / "out").read_bytes()
    assert kept.startswith(b"H" * 1000 + b"\n[agentab kept") and kept.endswith(b"T" * 1000)
    assert b"5000000 bytes between were not kept" in kept
    assert result.printed == (5_002_000, 0) and result.cut((Cap(1000, 1000), None)) == (True, False)
