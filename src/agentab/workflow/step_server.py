"""Warm steps: a local workflow's steps start as forks of one process that has agentab imported.

A run is six jobs (the agent run, one per validator, the measures), and each job is a fresh
`python -m agentab.steps.<step>`. Importing agentab in each costs 0.1 to 0.4 s on 2 cores, and a
judge's anthropic SDK 3 s: agentab's own time per run would be seconds, beside agents that take
seconds too. So the Snakefile's `onstart:` starts a step server (`StepServer.start`), once per
invocation, that imports the steps and loads the scenarios, and listens on a Linux abstract
socket named after the Snakemake process: `agentab-steps-<its pid>`. When a scenario has a
judge, a second server (`…-judge`) also imports the SDK, and judge steps are forked by it.

`python -m agentab.steps.<step> …` first imports the `agentab.steps` package, which calls
`agentab.workflow.step_client.hand_over_if_served`: the process looks for a server named after one of
its ancestors. With one, it passes the server its arguments, its working folder and its
standard streams (the file descriptors themselves), and the server forks a child that runs the
step exactly as the process would have. The process waits, passes any stop signal on to the
child, and exits with the child's exit status: to Snakemake and to the job's log, it is the
step. The child keeps the server's environment, which is Snakemake's: agentab reads no
environment variable, and builds the environment of every process it starts.

Without a server (a cluster node, a step run by hand, a server not ready yet or gone) the step
runs in its own process, as before. Only a descendant of the Snakemake that started the server
finds it, and the server checks that of each process that connects: a cluster job on the same
machine runs in its own process, inside its allocation. The step checks the server in turn (its
user, its descent from the same Snakemake): a socket's name is anyone's to take. When its
Snakemake ends (or dies: the server reads its end of a pipe), the server takes no more steps and
exits when the ones it forked have ended.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import struct
import sys
import time
import traceback
from dataclasses import dataclass

from agentab.scenario import load_scenario_for_step
from agentab.workflow.step_client import (
    HEADER,
    STANDARD_STREAMS,
    STOP_SIGNALS,
    abstract_address,
    decode_request,
    peer_descends_from,
    send_signal,
    server_name,
)

# The workflow's side: start the server with the workflow, stop it with the workflow.


class StepServer:
    """The step server of one workflow invocation, started by the Snakefile's `onstart:`."""

    def __init__(self, process):
        self.process = process

    @classmethod
    def start(
        cls,
        preload: list[str],
        scenarios: list[str],
        log_path,
        command: list[str] | None = None,
    ) -> StepServer:
        """Start a server for this process's descendants that first imports the modules in
        `preload` and loads the `scenarios` as steps load them. `command`: what runs `serve`
        (default `python -m agentab.workflow.step_server`)."""
        import subprocess

        command = command or [sys.executable, "-m", "agentab.workflow.step_server"]
        with open(log_path, "w", encoding="utf-8") as log:
            process = subprocess.Popen(
                [*command, str(os.getpid()), *preload, *(f"--scenario={s}" for s in scenarios)],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Snakemake's environment, which the steps it starts itself have too: each
                # step then builds the environment of every process it starts.
                env=None,
            )
        return cls(process)

    def stop(self, timeout: float = 30) -> None:
        """Take no more steps; wait (up to `timeout`) for the server to exit, which it does
        once the steps it forked have ended."""
        import subprocess

        if self.process.stdin:
            self.process.stdin.close()
        # Steps still running after `timeout`: the server exits after them.
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=timeout)


_RUNNING: list[StepServer] = []


def start_step_server(snakemake_workflow, plan) -> None:
    """From the Snakefile's `onstart:`. Local runs only: a cluster job runs its step inside its
    own allocation, where a process on the submitting machine has no business."""
    wanted = plan.config.get("step_server", True)  # `step_server: false` in the config: none
    if (
        wanted
        and can_serve()
        and snakemake_workflow.is_main_process
        and snakemake_workflow.local_exec
    ):
        plan.layout.step_server_log.parent.mkdir(parents=True, exist_ok=True)
        scenarios = list(plan.scenario_paths.values())
        log = plan.layout.step_server_log
        _RUNNING.append(StepServer.start(plan.warm_modules(), scenarios, log))


def can_serve() -> bool:
    """Abstract sockets and pidfds (Linux 5.3 and later): elsewhere every step runs in its own
    process, as on a cluster node."""
    if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


def stop_step_server() -> None:
    """From `onsuccess:` and `onerror:`."""
    while _RUNNING:
        _RUNNING.pop().stop()


# The server.

# A judge's SDK triples the server's memory, and a fork costs by the memory it copies the map of
# (2 ms from the lean server, 12 ms from one with the SDK): judge steps are forked from a server
# of their own, which the lean one sends them to once it is ready.
JUDGE_MODULE = "agentab.validators.judge"


def serve(owner: int, preload: list[str], scenarios: list[str] = ()) -> None:
    """Import `preload` and load `scenarios`, then fork a child per step handed over, until
    standard input (a pipe from the owner) ends; then exit when the last child has."""
    for signum in STOP_SIGNALS:
        # A stop reaches each step through the process standing in for it; the server itself
        # must outlive its steps to report their exit statuses.
        signal.signal(signum, signal.SIG_IGN)
    lean = [name for name in preload if name != JUDGE_MODULE]
    import_modules(lean)
    judge = JudgeServer.start(owner) if JUDGE_MODULE in preload else None
    Server(owner, server_name(owner), judge).serve(lean)


def import_modules(modules: list[str]) -> None:
    import gc
    import importlib

    for name in modules:
        importlib.import_module(name)
    # What is imported now is never collected: a fork's collector leaves it be, and does not
    # copy every page it would otherwise touch.
    gc.freeze()


@dataclass
class JudgeServer:
    """The server of judge steps: a fork of the lean server that also imports the SDK."""

    pid: int
    name: str
    ready: int | None  # the read end of a pipe: "ready" once it serves; None once read

    @classmethod
    def start(cls, owner: int) -> JudgeServer:
        name = server_name(owner) + "-judge"
        ready_reader, ready_writer = os.pipe()
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(ready_reader)
                import_modules([JUDGE_MODULE])
                Server(owner, name, None, ready_writer).serve([JUDGE_MODULE])
                code = 0
            except BaseException:
                # In the log; the lean server then forks judge steps itself.
                traceback.print_exc(file=sys.stdout)
            finally:
                sys.stdout.flush()
                os._exit(code)
        os.close(ready_writer)
        return cls(pid, name, ready_reader)


class Server:
    """Forks a child per step handed over on its socket, and reports its exit status."""

    def __init__(self, owner: int, name: str, judge: JudgeServer | None, ready: int | None = None):
        self.owner = owner
        self.name = name
        self.judge = judge
        self.judge_ready = False
        # Judge steps handed over while the judge server starts: they wait for it, rather than
        # import the SDK themselves (seconds) beside it. (connection, streams, request)
        self.waiting_for_the_judge: list[tuple[socket.socket, list[int], tuple]] = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(abstract_address(name))
        self.listener.listen(64)
        if ready is not None:
            os.write(ready, b"ready")
            os.close(ready)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, "listener")
        self.selector.register(sys.stdin, selectors.EVENT_READ, "owner")
        if judge:
            self.selector.register(judge.ready, selectors.EVENT_READ, "judge ready")
        # pidfd -> (pid, the connection of the process standing in for it, when it was forked)
        self.children: dict[int, tuple[int, socket.socket, float]] = {}

    def serve(self, imported: list[str]) -> None:
        print(f"serving as {self.name} after importing {', '.join(imported)}", flush=True)
        listening = True
        while listening or self.children or self.waiting_for_the_judge:
            for key, _ in self.selector.select():
                if key.data == "listener":
                    self.accept()
                elif key.data == "owner":
                    self.selector.unregister(sys.stdin)
                    self.selector.unregister(self.listener)
                    self.listener.close()
                    listening = False
                elif key.data == "judge ready":
                    self.judge_has_started()
                elif key.data == "child":
                    self.report_exit(key.fd)
                else:
                    # The process standing in for a step ended before the step (a kill -9):
                    # the step ends as that process would have.
                    _, pid = key.data
                    send_signal(pid, signal.SIGKILL)
                    self.selector.unregister(key.fileobj)
        if self.judge:
            os.waitpid(self.judge.pid, 0)  # it ends with the same owner, after its own steps

    def accept(self) -> None:
        connection, _ = self.listener.accept()
        try:
            connection.settimeout(10)
            header, fds, _, _ = socket.recv_fds(connection, HEADER.size, len(STANDARD_STREAMS))
            request = decode_request(receive_exactly(connection, HEADER.unpack(header)[0]))
            if len(fds) != len(STANDARD_STREAMS) or not peer_descends_from(connection, self.owner):
                self.turn_away(connection, fds, "refused")
                return
        except (OSError, ValueError, struct.error, UnicodeError):
            connection.close()
            return
        if self.judge and needs_a_judge(request[2]):
            if self.judge_ready:
                self.turn_away(connection, fds, f"elsewhere {self.judge.name}")
                return
            if self.judge.ready is not None:  # still starting
                self.waiting_for_the_judge.append((connection, fds, request))
                return
        self.fork_step(connection, fds, request)

    def judge_has_started(self) -> None:
        """The judge server serves (or failed to start: its steps are then forked here)."""
        self.judge_ready = os.read(self.judge.ready, 16) == b"ready"
        self.selector.unregister(self.judge.ready)
        os.close(self.judge.ready)
        self.judge.ready = None
        waiting, self.waiting_for_the_judge = self.waiting_for_the_judge, []
        for connection, fds, request in waiting:
            if self.judge_ready:
                self.turn_away(connection, fds, f"elsewhere {self.judge.name}")
            else:
                self.fork_step(connection, fds, request)

    def fork_step(self, connection: socket.socket, fds: list[int], request: tuple) -> None:
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            run_forked_step(request, fds, self.files_of_the_server(connection), self.selector)
        close_all(fds)
        print(f"{pid}: {request[2][0]} (forked by {self.name})", flush=True)
        with contextlib.suppress(OSError):  # its process is gone: seen below, and the step ends
            send(connection, f"pid {pid}")
        pidfd = os.pidfd_open(pid)
        self.children[pidfd] = (pid, connection, time.monotonic())
        self.selector.register(pidfd, selectors.EVENT_READ, "child")
        self.selector.register(connection, selectors.EVENT_READ, ("waiting", pid))

    def turn_away(self, connection: socket.socket, fds: list[int], answer: str) -> None:
        with contextlib.suppress(OSError):
            send(connection, answer)
        close_all(fds)
        connection.close()

    def files_of_the_server(self, connection: socket.socket) -> list:
        """What a forked step must not hold: the server's sockets, pidfds and pipe, and the
        streams of the steps waiting for the judge server."""
        connections = [other for _, other, _ in self.children.values()]
        ready = [self.judge.ready] if self.judge and self.judge.ready is not None else []
        waiting = [item for c, fds, _ in self.waiting_for_the_judge for item in (c, *fds)]
        return [self.listener, connection, *connections, *self.children, *ready, *waiting]

    def report_exit(self, pidfd: int) -> None:
        pid, connection, started = self.children.pop(pidfd)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        print(f"{pid}: exit {code} after {seconds:.3f} s", flush=True)
        with contextlib.suppress(KeyError):  # its process had already ended
            self.selector.unregister(connection)
        with contextlib.suppress(OSError):
            send(connection, f"exit {code if code >= 0 else 128 - code}")
        connection.close()


def needs_a_judge(step: list[str]) -> bool:
    """A validate step whose validator is a judge (the scenario is the one loaded at start)."""
    module, *arguments = step
    if module != "agentab.steps.validate":
        return False
    options = dict(zip(arguments, arguments[1:], strict=False))
    try:
        scenario = load_scenario_for_step(options["--scenario"], check_bricks=False)
        return scenario.validators[options["--validator"]].mode == "judge"
    except Exception:  # noqa: BLE001 - the step itself says what is wrong with it
        return False


def receive_exactly(connection: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = connection.recv(min(left, 1 << 16))
        if not chunk:
            raise ValueError("the request ended early")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def send(connection: socket.socket, line: str) -> None:
    connection.sendall(f"{line}\n".encode())


def close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def run_forked_step(request: tuple, fds: list[int], server_files: list, selector) -> None:
    """In the forked child: become the process that handed the step over, run the step, exit.
    `server_files`: the server's sockets and pidfds, none of which the step may hold."""
    selector.close()
    for each in server_files:
        each.close() if isinstance(each, socket.socket) else os.close(each)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    close_all(fds)
    code = 1
    cwd, ignored, step = request
    try:
        become(cwd, ignored)
        code = run_step_module(step)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def become(cwd: str, ignored: list[int]) -> None:
    """The process that handed the step over: its working folder, its stop signals."""
    os.chdir(cwd)
    for signum in STOP_SIGNALS:
        default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
        signal.signal(signum, signal.SIG_IGN if signum in ignored else default)


def run_step_module(step: list[str]) -> int:
    """Run `python -m <module> <arguments>` in this process; its exit status."""
    import runpy

    module, *arguments = step
    sys.argv = [module, *arguments]
    # Run as `python -m` runs it: its code afresh as __main__ (what it imports is imported).
    sys.modules.pop(module, None)
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exit:
        return exit_status(exit.code)
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def main(argv: list[str]) -> None:
    """`python -m agentab.workflow.step_server OWNER MODULE… --scenario=PATH…`"""
    owner, *rest = argv
    scenarios = [item.removeprefix("--scenario=") for item in rest if item.startswith("--")]
    serve(int(owner), [item for item in rest if not item.startswith("--")], scenarios)


if __name__ == "__main__":
    main(sys.argv[1:])
