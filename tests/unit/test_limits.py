"""`[protocol] limits`: sizes as a scenario writes them, the kernel enforcing each limit on a real
process tree (a cgroup per run where the host lets agentab make one, a capped tmpfs), and the
sandbox's /etc and user."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentab.confinement.bwrap import View, bwrap_argv
from agentab.confinement.limits import (
    DiskSpace,
    Limits,
    RunLimits,
    cgroup_place,
    limit_reason,
    parse_size,
    size_problem,
)
from agentab.run.process import run_process

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="a cgroup and a mount need root here")
SMALL = Limits(memory=200 << 20, processes=24, disk=8 << 20, patch=1 << 20)


def test_sizes_as_a_scenario_writes_them():
    assert parse_size("512M") == 512 << 20
    assert parse_size("2G") == 2 << 30
    assert parse_size("1.5GiB") == 3 << 29
    assert parse_size(4096 << 10) == 4 << 20
    assert size_problem("4G") is None
    assert "less than one megabyte" in size_problem("100K")
    assert "not a size" in size_problem("lots")
    assert "not a size" in size_problem(True)


def test_a_missing_limits_table_is_refused_at_load_naming_the_fix(tmp_path):
    from agentab.errors import ScenarioError
    from agentab.scenario import load_scenario
    from tests.conftest import REPO_ROOT

    text = (REPO_ROOT / "scenarios" / "demo" / "scenario.toml").read_text()
    folder = tmp_path / "demo"
    subprocess.run(["cp", "-r", str(REPO_ROOT / "scenarios" / "demo"), str(folder)], check=True)
    without = "\n".join(line for line in text.splitlines() if not line.startswith("limits ="))
    (folder / "scenario.toml").write_text(without + "\n")
    with pytest.raises(ScenarioError) as refused:
        load_scenario(folder / "scenario.toml", check_etalon=False)
    said = refused.value.render()
    assert "protocol.limits" in said and "has no default" in said
    assert 'limits = { memory = "4G", processes = 512, disk = "4G", patch = "5M" }' in said
    # A frozen copy from before limits existed still loads for the synthesis.
    frozen = load_scenario(folder / "scenario.toml", check_etalon=False, check_bricks=False)
    assert frozen.limits is None
    for wrong, key, why in (
        ('memory = "2K"', "memory", "less than one megabyte"),
        ('memory = "lots"', "memory", "is not a size"),
        ("processes = 0", "processes", "less than the minimum"),
    ):
        key_text = 'memory = "2G"' if key == "memory" else "processes = 256"
        (folder / "scenario.toml").write_text(text.replace(key_text, wrong))
        with pytest.raises(ScenarioError) as refused:
            load_scenario(folder / "scenario.toml", check_etalon=False)
        said = refused.value.render()
        assert f"[protocol.limits.{key}]" in said and why in said, said


def test_the_reason_names_each_limit_reached():
    reason = limit_reason(["memory", "patch"], SMALL, patch_size=3_000_000)
    assert reason.startswith("limit memory, patch: ")
    assert "(200M)" in reason and "3000000 bytes" in reason and "(1M)" in reason


def run_capped(tmp_path: Path, command: str, limits: RunLimits):
    return run_process(
        ["/bin/sh", "-c", command],
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        stdout_path=tmp_path / "out",
        stderr_path=tmp_path / "err",
        timeout_s=60,
        lock_path=tmp_path / "lock",
        limits=limits,
    )


@ROOT_ONLY
def test_a_cgroup_caps_processes_and_memory_and_says_it_did(tmp_path):
    place = cgroup_place()
    assert place is not None, "root here can make a cgroup per run"
    with RunLimits(SMALL, place) as capped:
        run_capped(tmp_path, "for i in $(seq 40); do sleep 1 & done; wait", capped)
        assert capped.reached() == ["processes"]
        assert capped.enforcement()["processes"].startswith("cgroup")
        folders = list(capped.folders)
    assert not any(folder.exists() for folder in folders)  # removed with the run
    with RunLimits(SMALL, place) as capped:
        run_capped(tmp_path, "python3 -c 'x = bytearray(400 * 2**20)'", capped)
        assert capped.reached() == ["memory"]
    with RunLimits(SMALL, place) as capped:  # within its limits: nothing reached
        run_capped(tmp_path, "python3 -c 'x = bytearray(20 * 2**20)'; sleep 0.1 & wait", capped)
        assert capped.reached() == []


def test_without_a_cgroup_the_rlimits_stand_in_and_say_so(tmp_path):
    with RunLimits(SMALL, None) as capped:
        done = run_capped(tmp_path, "python3 -c 'x = bytearray(400 * 2**20)'", capped)
        assert done.exit_code != 0  # RLIMIT_DATA: the allocation fails
        assert "rlimit RLIMIT_DATA" in capped.enforcement()["memory"]
        assert capped.reached() == []  # the kernel keeps no count of those refusals
    with RunLimits(SMALL, None) as capped:
        done = run_capped(tmp_path, "head -c 20000000 /dev/zero > big; echo $?", capped)
        assert (tmp_path / "big").stat().st_size == SMALL.disk  # RLIMIT_FSIZE, one file


@ROOT_ONLY
def test_a_run_cannot_write_past_its_disk_and_the_space_says_it_was_full(tmp_path):
    with DiskSpace(tmp_path / "space", SMALL.disk) as space:
        assert space.mounted and not space.full()
        done = subprocess.run(
            ["dd", "if=/dev/zero", f"of={space.folder / 'big'}", "bs=1M", "count=20"],
            capture_output=True,
            text=True,
        )
        assert "No space left on device" in done.stderr
        assert space.full()
        assert "a tmpfs" in space.enforcement()
    assert not os.path.ismount(tmp_path / "space")


def test_the_sandbox_sees_a_small_etc_and_is_no_root(tmp_path):
    command = (
        "id -u; cat /etc/shadow 2>&1; ls /etc/ssh 2>&1; ls /etc/ssl; "
        "getent hosts localhost >/dev/null && echo resolves; touch /etc/x 2>&1 || true"
    )
    done = subprocess.run(
        bwrap_argv(View(), ["/bin/sh", "-c", command], {"PATH": "/usr/bin:/bin"}),
        capture_output=True,
        text=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "1000"
    assert "/etc/shadow: No such file or directory" in done.stdout
    assert "/etc/ssh" in done.stdout and "No such file" in done.stdout
    assert "private" not in done.stdout  # /etc/ssl/private stays on the host
    assert "certs" in done.stdout and "resolves" in done.stdout
    assert "Read-only file system" in done.stdout
    # The control: the host has what the sandbox does not see.
    assert Path("/etc/shadow").exists()


def test_a_private_tmp_is_capped_at_the_disk_limit(tmp_path):
    view = View(private_size=SMALL.disk)
    command = "dd if=/dev/zero of=/tmp/big bs=1M count=20 2>&1 | tail -1; ls -l /tmp/big"
    done = subprocess.run(
        bwrap_argv(view, ["/bin/sh", "-c", command], {"PATH": "/usr/bin:/bin"}),
        capture_output=True,
        text=True,
    )
    assert str(SMALL.disk) in done.stdout, done.stdout


NPROC_PROBE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from agentab.confinement.limits import Limits, RunLimits
from agentab.run.process import run_process
folder = Path(sys.argv[2])
limits = Limits(memory=1 << 30, processes=6, disk=1 << 30, patch=1 << 20)
with RunLimits(limits, None) as capped:
    run_process(["/bin/sh", "-c", "for i in $(seq 20); do sleep 1 & done; wait; echo all-started"],
                env={"PATH": "/usr/bin:/bin"}, cwd=folder, stdout_path=folder / "out",
                stderr_path=folder / "err", timeout_s=30, lock_path=folder / "lock", limits=capped)
    print(capped.enforcement()["processes"])
print((folder / "out").read_text())
"""


@ROOT_ONLY
def test_a_user_who_is_not_root_gets_the_processes_limit_from_rlimit():
    # As a user who is not root, no cgroup: RLIMIT_NPROC, on top of what the user already runs.
    # The system's Python runs a copy of the package from a folder that user may read (the
    # checkout and its virtualenv may sit under a home only root can read, as in CI).
    import shutil
    import tempfile

    from tests.conftest import REPO_ROOT

    folder = Path(tempfile.mkdtemp(prefix="agentab-nobody-", dir="/tmp"))
    try:
        folder.chmod(0o777)
        shutil.copytree(REPO_ROOT / "src" / "agentab", folder / "src" / "agentab")
        (folder / "probe.py").write_text(NPROC_PROBE)
        done = subprocess.run(
            ["/usr/bin/python3", str(folder / "probe.py"), str(folder / "src"), str(folder)],
            user=65534,
            group=65534,
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin"},
        )
        assert done.returncode == 0, done.stderr
        assert "RLIMIT_NPROC, over what the user already ran" in done.stdout
        assert "all-started" not in done.stdout  # the shell could not start its twenty
        assert "Cannot fork" in (folder / "err").read_text()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
