"""A `View` made real for one process: bwrap's command line, and the one endpoint it may reach.

A confined agent has no network (`--unshare-net`): a loopback of its own, on which nothing
listens. Its model endpoint (the offline model, or the recording proxy of a real provider) runs
outside, in the run's step. agentab opens a listening socket *inside* the sandbox's network
namespace before the sandbox's command starts (bwrap waits on `--block-fd` until then): root
from a thread that enters that namespace for one `socket()` call, anyone else through a
one-shot helper process (`listen_inside`). Each
connection made to it is carried to the endpoint outside. So the agent reaches exactly one
address, the same in every run (`ENDPOINT_URL`), and nothing of another run, of agentab or of
the machine; no process of ours runs inside, where the agent could see or end it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import socket
import threading
import time
from urllib.parse import urlsplit

from agentab.confinement.bwrap import View, bwrap_argv, hidden_options, info_child_pid
from agentab.confinement.seccomp import program_fd

# Where a confined agent reaches its model: the same address in every run and every cell.
ENDPOINT_PORT = 8017
ENDPOINT_URL = f"http://127.0.0.1:{ENDPOINT_PORT}"
CLONE_NEWNET = 0x40000000
CHUNK = 64 * 1024
LOOPBACK_WAIT_S = 5.0


class SandboxError(OSError):
    """The sandbox could not be set up (bwrap ended early, its namespace could not be entered)."""


class Sandbox:
    """One confined process: `command` wraps its argv, `started` is called with bwrap's pid once
    it runs, `close` after it ended. `endpoint` is the host base URL (http://127.0.0.1:PORT) the
    process reaches at `ENDPOINT_URL`, or None for no network at all."""

    def __init__(self, view: View, endpoint: str | None = None):
        self.view = view
        self.endpoint = endpoint
        self.pass_fds: tuple[int, ...] = ()
        self._listener: socket.socket | None = None
        self._fds: list[int] = []
        if endpoint is not None:
            self._info_read, info_write = os.pipe()
            block_read, self._block_write = os.pipe()
            self.pass_fds = (info_write, block_read)
            self._fds = [self._info_read, info_write, block_read, self._block_write]

    def command(self, argv: list[str], env: dict[str, str]) -> list[str]:
        command = bwrap_argv(self.view, argv, env)
        if self.endpoint is not None:
            info_write, block_read = self.pass_fds
            options = ["--info-fd", str(info_write), "--block-fd", str(block_read)]
            command = [command[0], *options, *command[1:]]
        seccomp = program_fd()
        if seccomp is not None:  # no process inside reaches into another (`seccomp.py`)
            command = [command[0], "--seccomp", str(seccomp), *command[1:]]
            self.pass_fds = (*self.pass_fds, seccomp)
            self._fds.append(seccomp)
        command, options_fd = hidden_options(command)
        self.pass_fds = (*self.pass_fds, options_fd)
        self._fds.append(options_fd)
        return command

    def started(self, pid: int) -> None:
        """bwrap runs as `pid`: open the endpoint inside, then let the command start."""
        self._close_child_ends()
        if self.endpoint is None:
            return
        try:
            child = info_child_pid(self._info_read)
            self._listener = listen_inside(child, ENDPOINT_PORT)
        except OSError as error:
            raise SandboxError(
                f"the sandbox's model endpoint could not be opened: {error}"
            ) from None
        target = urlsplit(self.endpoint)
        address = (target.hostname or "127.0.0.1", target.port or 80)
        threading.Thread(
            target=carry_connections, args=(self._listener, address), daemon=True
        ).start()
        os.write(self._block_write, b"go")

    def close(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []

    def _close_child_ends(self) -> None:
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
            self._fds.remove(fd)


def listen_inside(pid: int, port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:`port` of the network namespace of process `pid`.

    Root enters the namespace from a thread of its own (entering moves the calling thread
    only, so no other thread of the step ever runs there). Anyone else must first enter the
    user namespace that owns it, which a process with threads cannot: a one-shot process does
    it and hands the socket back."""
    try:
        return listen_from_a_thread(pid, port)
    except PermissionError:
        return listen_from_a_helper(pid, port)


# The one-shot process of `listen_from_a_helper`: argv is the pid, the port and the fd of the
# channel the socket goes back on. NS_GET_USERNS (0xb701) names the user namespace that owns
# the network namespace: bwrap nests user namespaces, so /proc/<pid>/ns/user may be another.
HELPER = """
import ctypes, fcntl, os, socket, sys
pid, port, channel = (int(a) for a in sys.argv[1:4])
libc = ctypes.CDLL(None, use_errno=True)
net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
user = fcntl.ioctl(net, 0xB701)
for fd, kind in ((user, 0x10000000), (net, 0x40000000)):
    if libc.setns(fd, kind) != 0:
        sys.exit(f"setns: {os.strerror(ctypes.get_errno())}")
import errno, time
listener = socket.socket()
deadline = time.monotonic() + 5
while True:  # bwrap brings the sandbox's loopback up a moment after it reports the sandbox
    try:
        listener.bind(("127.0.0.1", port))
        break
    except OSError as error:
        if error.errno != errno.EADDRNOTAVAIL or time.monotonic() > deadline:
            raise
        time.sleep(0.002)
listener.listen(64)
socket.send_fds(socket.socket(fileno=channel), [b"ok"], [listener.fileno()])
"""


def listen_from_a_helper(pid: int, port: int) -> socket.socket:
    import subprocess
    import sys

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        done = subprocess.run(
            [sys.executable, "-S", "-c", HELPER, str(pid), str(port), str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            capture_output=True,
            text=True,
            env={},
            timeout=30,
        )
        if done.returncode != 0:
            raise OSError(done.stderr.strip()[-300:] or f"exit status {done.returncode}")
        _, fds, _, _ = socket.recv_fds(ours, 16, 1)
    return socket.socket(fileno=fds[0])


def listen_from_a_thread(pid: int, port: int) -> socket.socket:
    found: dict = {}

    def enter_and_listen() -> None:
        try:
            namespace = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
            try:
                if _libc().setns(namespace, CLONE_NEWNET) != 0:
                    code = ctypes.get_errno()
                    raise OSError(code, f"setns: {os.strerror(code)}")  # EPERM: not root
            finally:
                os.close(namespace)
            found["socket"] = listen_on_loopback(port)
        except OSError as error:
            found["error"] = error

    thread = threading.Thread(target=enter_and_listen, name="sandbox-endpoint")
    thread.start()
    thread.join()
    if "error" in found:
        raise found["error"]
    return found["socket"]


def listen_on_loopback(port: int) -> socket.socket:
    """Listen on 127.0.0.1:`port` of the calling thread's network namespace. bwrap brings the
    sandbox's loopback up a moment after it reports the sandbox, and until then 127.0.0.1 is no
    address of it (EADDRNOTAVAIL: seen once in CI): wait for it, a few seconds at most."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    deadline = time.monotonic() + LOOPBACK_WAIT_S
    while True:
        try:
            listener.bind(("127.0.0.1", port))
            break
        except OSError as error:
            if error.errno != errno.EADDRNOTAVAIL or time.monotonic() > deadline:
                listener.close()
                raise
            time.sleep(0.002)
    listener.listen(64)
    return listener


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def carry_connections(listener: socket.socket, address: tuple[str, int]) -> None:
    """Each connection made inside, carried to `address` outside, both ways, until closed."""
    while True:
        try:
            inside, _ = listener.accept()
        except OSError:
            return  # closed: the run is over
        threading.Thread(target=carry, args=(inside, address), daemon=True).start()


def carry(inside: socket.socket, address: tuple[str, int]) -> None:
    with inside:
        try:
            outside = socket.create_connection(address)
        except OSError:
            return
        with outside:
            back = threading.Thread(target=pump, args=(outside, inside), daemon=True)
            back.start()
            pump(inside, outside)
            back.join()


def pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(CHUNK):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        # The other way may still be talking: say only that this way is done.
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):
            source.shutdown(socket.SHUT_RD)
