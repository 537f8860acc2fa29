"""No process in a sandbox may reach into another one's memory or descriptors.

Inside a sandbox every process runs as the same user, so without more the agent's bash could
attach to the harness (`ptrace`), copy its descriptors (`pidfd_getfd`) or write into its memory
(`process_vm_writev`): the stream agentab reads the run's facts from, or a validator's standard
output that carries its metrics, would then say what the agent wanted. A seccomp filter, handed
to bwrap (`--seccomp`), makes those calls fail with EPERM for every process of the sandbox. (The
other door, opening `/proc/<pid>/fd/1`, is shut by giving the process a socket, not a pipe, for
its output: a socket cannot be opened through /proc.) A debugger cannot run in a sandbox.
`/proc/<pid>/mem` and its kin are paths, which a filter cannot see: `memory.py` closes them.
"""

from __future__ import annotations

import os
import platform
import struct

# Classic BPF, as the kernel reads a seccomp program (linux/filter.h, linux/seccomp.h).
LD_W_ABS, JEQ_K, JSET_K, RET_K = 0x20, 0x15, 0x45, 0x06
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EPERM = 1
ARCH_OFFSET, NR_OFFSET = 4, 0  # struct seccomp_data: nr, then arch
X32_BIT = 0x40000000

# (audit arch, {call: number}) per machine: the calls that reach into another process.
MACHINES = {
    "x86_64": (
        0xC000003E,
        {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438},
    ),  # fmt: skip
    "aarch64": (
        0xC00000B7,
        {"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438},
    ),  # fmt: skip
}


def instruction(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine, or None where agentab knows no call numbers (then no
    filter: run.json says which confinement ran)."""
    known = MACHINES.get(machine or platform.machine())
    if known is None:
        return None
    arch, calls = known
    numbers = sorted(calls.values())
    deny = b""
    count = len(numbers)
    code = [
        instruction(LD_W_ABS, 0, 0, ARCH_OFFSET),
        # Another architecture's calls (a 32-bit binary) have other numbers: refuse them all.
        instruction(JEQ_K, 1, 0, arch),
        instruction(RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM),
        instruction(LD_W_ABS, 0, 0, NR_OFFSET),
        instruction(JSET_K, count + 1, 0, X32_BIT),  # the x32 ABI: refused as well
    ]
    for position, number in enumerate(numbers):
        code.append(instruction(JEQ_K, count - position, 0, number))
    code.append(instruction(RET_K, 0, 0, SECCOMP_RET_ALLOW))
    deny = instruction(RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM)
    return b"".join(code) + deny


def program_fd() -> int | None:
    """A descriptor bwrap reads the filter from (`--seccomp FD`), or None."""
    code = program()
    if code is None:
        return None
    fd = os.memfd_create("agentab-seccomp", 0)
    os.write(fd, code)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
