"""A model server's declared concurrency caps the agent runs against it at once: the real
snakemake, the real pi binary, and agentab's offline model standing in for a server of the
user's own that counts the requests it holds at a time.

With `concurrency = 1` the server never holds two requests; the same scenario without it, on
the same two cores, does (the control: the test can tell a cap from a quiet machine)."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from agentab.offline_model import OfflineModelServer, load_policy
from agentab.offline_model.local_server import serving
from agentab.offline_model.server import RequestHandler
from tests.e2e.workflow import make_project, measures_files, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


class Counted(RequestHandler):
    """The offline model's handler, holding each request a while and counting those held."""

    def do_POST(self):
        server = self.server
        with server.count_lock:
            server.held += 1
            server.most_held = max(server.most_held, server.held)
        try:
            time.sleep(0.5)  # a slow server: two runs at once would overlap here
            super().do_POST()
        finally:
            with server.count_lock:
                server.held -= 1


def counting_server(log: Path) -> OfflineModelServer:
    server = OfflineModelServer(load_policy("demo"), 1, log, harness="pi")
    server.RequestHandlerClass = Counted
    server.count_lock = threading.Lock()
    server.held = server.most_held = 0
    return server


@pytest.mark.parametrize("concurrency", [1, None])
def test_a_server_declared_to_serve_one_request_at_a_time_never_gets_two(
    tmp_path, pi_installation, concurrency
):
    project = make_project(tmp_path / "project", pi_installation.root.parents[1], repetitions=1)
    server = counting_server(tmp_path / "server.jsonl")
    with serving(server, "counted-model") as url:
        scenario = project / "demo" / "scenario.toml"
        text = re.sub(r'(?m)^provider = "offline".*$', 'provider = "local"', scenario.read_text())
        cap = f"concurrency = {concurrency}\n" if concurrency else ""
        text = text.replace(
            "[agent]\n",
            f'[providers.local]\nurl = "{url}"\napi = "openai-completions"\nreasoning = true\n'
            f"{cap}\n[agent]\n",
            1,
        )
        scenario.write_text(text)
        done = snakemake(project, listing=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert len(measures_files(project)) == 4
    # As a person sees it (the default profile): agentab's lines, none of Snakemake's per job.
    assert "agentab: demo: 4/4 runs measured (4 valid); read results/demo/synthesis.md" in output
    assert "localrule" not in output and "Select jobs" not in output
    if concurrency:
        assert "agentab: at most 1 agent run at a time against demo: [providers.local]" in output
        assert server.most_held == 1
    else:
        assert server.most_held >= 2  # the control: uncapped, two runs' requests overlap
