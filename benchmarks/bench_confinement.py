"""What confinement costs a run: starting the sandbox, opening its model endpoint, its limits
(a cgroup made and removed, a capped tmpfs mounted and unmounted, where the host allows them),
and a request through that endpoint, against the same without a sandbox (docs/confinement.md).

    python benchmarks/bench_confinement.py [--quick]

The target (docs/performance.md): at most 0.1 s per run, median, so that agentab's own time per run stays
under 0.5 s. A run pays the start and the endpoint once, and a few requests.
"""

from __future__ import annotations

import argparse
import http.server
import statistics
import tempfile
import threading
import time
from pathlib import Path

from agentab.confinement.bwrap import View
from agentab.confinement.endpoint import ENDPOINT_URL, Sandbox
from agentab.confinement.limits import (
    DiskSpace,
    Limits,
    RunLimits,
    cgroup_place,
    enforcement_here,
)
from agentab.run.process import run_process

TARGET_S = 0.1
ENV = {"PATH": "/usr/bin:/bin"}
FETCH = (
    "import urllib.request, time; t = time.perf_counter(); "
    "[urllib.request.urlopen('{url}').read() for _ in range(20)]; "
    "print((time.perf_counter() - t) / 20)"
)


class Empty(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


LIMITS = Limits(memory=2 << 30, processes=256, disk=1 << 30, patch=1 << 20)


def timed_run(folder: Path, argv: list[str], sandbox, limits=None) -> tuple[float, str]:
    started = time.perf_counter()
    run_process(
        argv,
        env=ENV,
        cwd=Path("/"),
        stdout_path=folder / "out",
        stderr_path=folder / "err",
        timeout_s=60,
        lock_path=folder / "lock",
        sandbox=sandbox,
        limits=limits,
    )
    return time.perf_counter() - started, (folder / "out").read_text().strip()


def limited_run(folder: Path, view_of, host: str) -> float:
    """A confined run as a run step makes one: its capped space, its cgroup, its sandbox."""
    started = time.perf_counter()
    with DiskSpace(folder / "space", LIMITS.disk) as space:
        workspace = space.folder / "workspace"
        workspace.mkdir()
        with RunLimits(LIMITS, cgroup_place()) as limits:
            timed_run(folder, ["/bin/true"], Sandbox(view_of(workspace), host), limits)
            limits.reached()
        space.full()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few repetitions only")
    args = parser.parse_args()
    repetitions = 3 if args.quick else 30
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Empty)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = f"http://127.0.0.1:{server.server_address[1]}"
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        workspace = folder / "workspace"
        workspace.mkdir()

        def view_of(writable: Path) -> View:
            return View(writable={writable: "/workspace"}, cwd="/workspace")

        view = view_of(workspace)
        plain = [timed_run(folder, ["/bin/true"], None)[0] for _ in range(repetitions)]
        boxed = [timed_run(folder, ["/bin/true"], Sandbox(view))[0] for _ in range(repetitions)]
        served = [
            timed_run(folder, ["/bin/true"], Sandbox(view, endpoint=host))[0]
            for _ in range(repetitions)
        ]
        limited = [limited_run(folder, view_of, host) for _ in range(repetitions)]
        python = ["/usr/bin/python3", "-c"]
        direct = float(timed_run(folder, [*python, FETCH.format(url=host)], None)[1])
        carried = float(
            timed_run(folder, [*python, FETCH.format(url=ENDPOINT_URL)], Sandbox(view, host))[1]
        )
    server.shutdown()
    start = statistics.median(boxed) - statistics.median(plain)
    endpoint = statistics.median(served) - statistics.median(boxed)
    limits = statistics.median(limited) - statistics.median(served)
    per_run = statistics.median(limited) - statistics.median(plain)
    print(
        f"process start, unconfined (median of {repetitions}): {statistics.median(plain) * 1e3:.1f} ms"
    )
    print(f"sandbox start: +{start * 1e3:.1f} ms; its model endpoint: +{endpoint * 1e3:.1f} ms")
    print(f"its limits ({enforcement_here()}): +{limits * 1e3:.1f} ms")
    print(
        f"a request: {direct * 1e3:.2f} ms on loopback, {carried * 1e3:.2f} ms through the endpoint"
    )
    verdict = "met" if per_run <= TARGET_S else "NOT MET"
    print(
        f"confinement with limits per run: {per_run * 1e3:.1f} ms "
        f"(target <= {TARGET_S * 1e3:.0f} ms: {verdict})"
    )


if __name__ == "__main__":
    main()
