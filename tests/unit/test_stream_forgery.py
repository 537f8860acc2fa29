"""No process in a sandbox writes into another one's output: the harness's stream is what the
run's facts are read from, a validator's standard output carries its metrics. The doors, each
tried from inside: opening /proc/<pid>/fd/1 again, attaching with ptrace, copying the descriptor
with pidfd_getfd. The control: unconfined, the first and the last work."""

from __future__ import annotations

from pathlib import Path

from agentab.confinement.bwrap import View
from agentab.confinement.endpoint import Sandbox
from agentab.confinement.seccomp import MACHINES, program
from agentab.run.process import run_process

FORGER = r"""
import ctypes, os, sys
target = int(sys.argv[1])
try:
    with open(f"/proc/{target}/fd/1", "w") as out:
        out.write("FORGED-BY-PROC\n")
    print("proc: opened")
except OSError as error:
    print("proc:", error.strerror)
libc = ctypes.CDLL(None, use_errno=True)
print("ptrace:", libc.syscall(101 if os.uname().machine == "x86_64" else 117, 0x4206, target, 0, 0),
      os.strerror(ctypes.get_errno()))
copied = libc.syscall(438, os.pidfd_open(target), 1, 0)
if copied >= 0:
    os.write(copied, b"FORGED-BY-PIDFD\n")
print("pidfd_getfd:", copied, os.strerror(ctypes.get_errno()))
"""
# The process whose output is forged starts the forger as its child, then writes its own line.
SCRIPT = 'python3 -c "$0" $$; echo honest'


def run(tmp_path: Path, sandbox) -> str:
    out = tmp_path / "out"
    run_process(
        ["/bin/sh", "-c", SCRIPT, FORGER],
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        stdout_path=out,
        stderr_path=tmp_path / "err",
        timeout_s=30,
        lock_path=tmp_path / "lock",
        sandbox=sandbox,
    )
    return out.read_text()


def test_inside_a_sandbox_no_process_writes_into_anothers_output(tmp_path):
    out = run(tmp_path, Sandbox(View()))
    assert "FORGED" not in out, out
    assert "proc: No such device or address" in out
    assert "ptrace: -1 Operation not permitted" in out
    assert "pidfd_getfd: -1 Operation not permitted" in out
    assert out.rstrip().endswith("honest")


def test_unconfined_the_same_doors_are_open(tmp_path):
    out = run(tmp_path, None)  # the control: a pipe, and no filter
    assert "FORGED-BY-PROC" in out and "proc: opened" in out
    assert "FORGED-BY-PIDFD" in out
    assert "ptrace: 0 " in out  # PTRACE_SEIZE: attached, without stopping it


def test_the_filter_is_a_whole_program_for_each_machine():
    for machine in MACHINES:
        code = program(machine)
        assert code is not None and len(code) % 8 == 0
        # arch check (3), load, x32 check, one test per call, allow, deny
        assert len(code) // 8 == 5 + len(MACHINES[machine][1]) + 2
    assert program("sparc") is None
