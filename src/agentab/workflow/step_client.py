"""The step's side of warm steps (agentab.workflow.step_server): hand the step over, stand in for it.

Imported first by every `python -m agentab.steps.<step>`, so it imports next to nothing: the C
modules `_socket` and `_signal`, not `socket` and `signal` (their enums cost more than the rest
of the hand-over). The request is the working folder, the stop signals the process ignores and
the step's argv, NUL-separated, with the three standard streams attached (SCM_RIGHTS); the
server answers one line per event: `pid N` once it forked the step, `exit N` when the step
ended, `elsewhere NAME` to send it to the server NAME instead, or `refused`.
"""

from __future__ import annotations

import _signal
import _socket
import os
import struct
import sys

STEP_MODULE_PREFIX = "agentab.steps."
STOP_SIGNALS = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)
HEADER = struct.Struct("!I")
PEER = struct.Struct("3i")  # pid, uid, gid (SO_PEERCRED)
STANDARD_STREAMS = (0, 1, 2)
FAULT_EXIT = 3  # every step's exit status for a fault (agentab.steps.common): Snakemake redoes it


def hand_over_if_served() -> None:
    """In a process started as `python -m agentab.steps.<step>` with a step server to hand over
    to: have the server run the step, and exit with its exit status. Otherwise return, and the
    step runs here."""
    step = step_command(sys.orig_argv)
    if step is None:
        return
    served = connect_to_a_server()
    if served is None:
        return  # no server (yet, or any more): the step runs here
    code = stand_in_for_the_step(*served, step)
    if code is not None:
        os._exit(code)


def step_command(argv: list[str]) -> list[str] | None:
    """`[module, *arguments]` of `python [options] -m agentab.steps.<step> …`, else None."""
    arguments = iter(argv[1:])
    for flag in arguments:
        if flag == "-m":
            module = next(arguments, "")
            return [module, *arguments] if module.startswith(STEP_MODULE_PREFIX) else None
        if flag in ("-X", "-W"):
            next(arguments, None)  # the option's value
        elif flag in ("-c", "-") or not flag.startswith("-"):
            return None  # a command, standard input or a script: not a step
    return None


def connect_to_a_server():
    """(connection, its owner): the server of the nearest ancestor that has one (a shell stands
    between a step and its Snakemake); None when none has."""
    pid = os.getppid()
    while pid > 1:
        connection = connect_to(server_name(pid), pid)
        if connection is not None:
            return connection, pid
        pid = parent_of(pid) or 0
    return None


def connect_to(name: str, owner: int):
    """A connection to the server `name` of the Snakemake `owner`, None when there is none.

    An abstract socket's name is anyone's to take: the server must be a process of this user
    descended from the owner (SO_PEERCRED), or the step keeps its streams and runs here."""
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        connection.connect(abstract_address(name))
        if peer_descends_from(connection, owner):
            return connection
    except OSError:
        pass
    connection.close()
    return None


def peer_descends_from(connection, owner: int) -> bool:
    """Whether the other end of a Unix socket is a process of this user descended from
    `owner` (SO_PEERCRED): what the step asks of the server, and the server of the step."""
    raw = connection.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, PEER.size)
    pid, uid, _ = PEER.unpack(raw)
    return uid == os.getuid() and descends_from(pid, owner)


def descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        pid = parent_of(pid) or 0
    return False


def server_name(owner: int) -> str:
    return f"agentab-steps-{owner}"


def abstract_address(name: str) -> str:
    """A Linux abstract socket: no file to leave behind, and out of reach of another machine
    that shares the project's filesystem."""
    return "\0" + name


def parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def encode_request(cwd: str, ignored: list[int], step: list[str]) -> bytes:
    fields = [cwd, ",".join(map(str, ignored)), *step]
    return "\0".join(fields).encode("utf-8", "surrogateescape")


def decode_request(payload: bytes) -> tuple[str, list[int], list[str]]:
    cwd, ignored, *step = payload.decode("utf-8", "surrogateescape").split("\0")
    return cwd, [int(signum) for signum in ignored.split(",") if signum], step


def stand_in_for_the_step(connection, owner: int, step: list[str]) -> int | None:
    """Send the step, pass stop signals on to its process, and return its exit status; None
    when no server took it (the step then runs here). A server may send the step to another
    (`elsewhere NAME`: judge steps have a server of their own)."""
    handlers = {signum: _signal.getsignal(signum) for signum in STOP_SIGNALS}
    ignored = [signum for signum, handler in handlers.items() if handler == _signal.SIG_IGN]
    received: list[int] = []
    child: list[int] = []

    def pass_on(signum, frame) -> None:
        received.append(signum)
        for pid in child:
            send_signal(pid, signum)

    for signum in STOP_SIGNALS:
        if signum not in ignored:
            _signal.signal(signum, pass_on)
    payload = encode_request(os.getcwd(), ignored, step)
    while connection is not None:
        try:
            answer = follow_the_step(connection, payload, child, received)
        finally:
            connection.close()
        if isinstance(answer, int):
            return answer
        connection = connect_to(answer, owner) if answer else None
    for signum, handler in handlers.items():
        _signal.signal(signum, handler)
    for signum in received:
        os.kill(os.getpid(), signum)  # what would have stopped the step stops it here
    return None


def follow_the_step(connection, payload: bytes, child: list[int], received: list[int]):
    """Send the request and follow the step: its exit status (int), the name of the server to
    send it to instead (str), or None when the server refused it."""
    send_request(connection, payload)
    for line in replies(connection):
        event, _, value = line.partition(" ")
        if event == "pid":
            child.append(int(value))
            for signum in received:
                send_signal(int(value), signum)
        elif event == "exit":
            return int(value)
        elif event == "elsewhere":
            return value
        elif event == "refused":
            return None
    # The server ended before the step did (it was killed): the step's exit status is lost.
    # Its process goes on; it is waited for, so that a redo never runs beside it.
    for pid in child:
        wait_for_the_end_of(pid)
    os.write(2, b"agentab: the step server ended before this step did; the step is redone\n")
    return FAULT_EXIT


def wait_for_the_end_of(pid: int) -> None:
    import select

    try:
        ended = os.pidfd_open(pid)
    except OSError:
        return  # already gone
    try:
        select.select([ended], [], [])
    finally:
        os.close(ended)


def send_request(connection, payload: bytes) -> None:
    streams = struct.pack(f"{len(STANDARD_STREAMS)}i", *STANDARD_STREAMS)
    rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, streams)]
    connection.sendmsg([HEADER.pack(len(payload))], rights)
    connection.sendall(payload)


def replies(connection):
    """The server's lines, as they come."""
    pending = b""
    while True:
        chunk = connection.recv(4096)
        if not chunk:
            return
        pending += chunk
        *lines, pending = pending.split(b"\n")
        yield from (line.decode() for line in lines)


def send_signal(pid: int, signum: int) -> None:
    # Not contextlib.suppress: contextlib imports collections, which every step would pay for.
    try:  # noqa: SIM105
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass
