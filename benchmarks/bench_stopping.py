"""How long stopping takes: a run's local server, and a run's process group at its timeout.

    python benchmarks/bench_stopping.py [--quick]

Every run pays both: its offline model or recording proxy stops when the harness has ended
(`agentab.offline_model.local_server`), and a harness that outlives its timeout is ended with
its whole process group (`agentab.run.process.run_process`). Printed, median of the
repetitions:
- a server stopping with no request in flight (it must not wait for a poll interval);
- a server stopping with a handler stuck after its reply (it waits `HANDLERS_GRACE_S`, then
  leaves the handler behind);
- `run_process` returning after its timeout, the program and a grandchild still running
  (the time past the timeout: ending the group).
The unit tests check what happens (tests/unit/test_local_server.py, test_process.py); the
figures are here because they depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from agentab.offline_model import local_server
from agentab.offline_model.local_server import LocalServer, serving
from agentab.run.process import run_process

TIMEOUT_S = 0.5
GROUP = "import subprocess, time; subprocess.Popen(['sleep', '60']); time.sleep(60)"


class Stuck(BaseHTTPRequestHandler):
    release = threading.Event()

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
        self.wfile.flush()
        self.release.wait(30)

    def log_message(self, *args):
        pass


def server_stop(stuck: bool) -> float:
    """Seconds from the end of the `with` block's body to the server closed."""
    with serving(LocalServer(Stuck), "bench") as url:
        if stuck:
            urllib.request.urlopen(url + "/", timeout=5).read()
        started = time.perf_counter()
    return time.perf_counter() - started


def process_stop(folder: Path) -> float:
    """Seconds `run_process` took past its timeout."""
    started = time.perf_counter()
    result = run_process(
        [sys.executable, "-c", GROUP],
        env={"PATH": "/usr/bin:/bin"},
        cwd=folder,
        stdout_path=folder / "out",
        stderr_path=folder / "err",
        timeout_s=TIMEOUT_S,
        lock_path=folder / "lock",
    )
    assert result.timed_out, result
    return time.perf_counter() - started - TIMEOUT_S


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few repetitions only")
    args = parser.parse_args()
    repetitions = 1 if args.quick else 10
    idle = [server_stop(stuck=False) for _ in range(repetitions)]
    stuck = [server_stop(stuck=True) for _ in range(repetitions)]
    Stuck.release.set()
    with tempfile.TemporaryDirectory() as name:
        ended = [process_stop(Path(name)) for _ in range(repetitions)]
    grace = local_server.HANDLERS_GRACE_S
    print(f"server stop, idle (median of {repetitions}): {statistics.median(idle) * 1e3:.1f} ms")
    print(
        f"server stop, a handler stuck: {statistics.median(stuck):.2f} s "
        f"(grace {grace:.1f} s, then it is left behind)"
    )
    print(f"process group ended past its timeout: {statistics.median(ended):.2f} s")


if __name__ == "__main__":
    main()
