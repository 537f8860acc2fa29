"""The recording proxy (docs/receipts.md) through the real workflow and the real pi: a cell on a real
provider's API, reached at a local stand-in (the offline model speaking that provider's API)
named by `provider_endpoints`, with a canary key from the credentials file.

Every request must be recorded and proven (model, thinking, bricks), the stand-in must receive
the canary key (so it passed through the proxy), and the key must reach no file under the
results, the state folder or `.snakemake/`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentab.offline_model import OfflineModelServer, load_policy
from agentab.offline_model.server import RequestHandler
from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CANARY = "sk-canary-7f3e9a1c5b2d4e6f8a0b"
KEY_HEADERS = ("x-api-key", "authorization")


class StandIn:
    """The offline model on 127.0.0.1 as a provider's API, keeping (in memory only) the keys
    the requests carried."""

    def __init__(self, log: Path, policy: str = "demo"):
        self.keys: list[str] = []
        self.server = OfflineModelServer(load_policy(policy), 7, log, harness="pi")
        keys = self.keys

        class KeyKeepingHandler(RequestHandler):
            def _answer(self, method, raw):
                found = (self.headers.get(h) for h in KEY_HEADERS)
                keys.extend(v.removeprefix("Bearer ") for v in found if v)
                super()._answer(method, raw)

        self.server.RequestHandlerClass = KeyKeepingHandler

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.server.base_url

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def project_on_provider(tmp_path: Path, harnesses: Path, provider: str, model: str) -> Path:
    project = make_project(tmp_path / provider, harnesses, repetitions=1)
    scenario = project / "demo" / "scenario.toml"
    text = re.sub(r'(?m)^provider = "offline".*$', f'provider = "{provider}"', scenario.read_text())
    text = re.sub(r'(?m)^model = "demo".*$', f'model = "{model}"', text, count=1)
    scenario.write_text(text)
    (project / "credentials.toml").write_text(f'[{provider}]\napi_key = "{CANARY}"\n')
    return project


def files_holding(root: Path, text: str) -> list[Path]:
    needle = text.encode()
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.mark.parametrize(
    ("provider", "model", "api", "off_applied"),
    [
        ("anthropic", "claude-sonnet-4-5", "anthropic-messages", "off"),
        # An OpenAI-style provider. pi's catalogue says gpt-oss cannot reason "off": pi applies
        # "low" instead and says so only in its stream. The receipt must catch it.
        ("groq", "openai/gpt-oss-20b", "openai-chat", "low"),
    ],
)
def test_a_real_providers_requests_are_recorded_and_proven_and_its_key_is_written_nowhere(
    tmp_path, pi_installation, provider, model, api, off_applied
):
    project = project_on_provider(tmp_path, pi_installation.root.parents[1], provider, model)
    stand_in = StandIn(tmp_path / f"{provider}-stand-in.jsonl")
    with stand_in as url:
        config = project / "config" / "config.yaml"
        config.write_text(
            config.read_text() + "credentials: credentials.toml\n"
            f"provider_endpoints:\n  {provider}: {url}\n"
        )
        result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    runs = sorted((project / "results" / "demo" / "runs").glob("*/r01"))
    assert [run.parent.name for run in runs] == [
        "nothing-high",
        "nothing-off",
        "rule-high",
        "rule-off",
    ]
    recorded = 0
    for run in runs:
        requests = [json.loads(line) for line in (run / "model-requests.jsonl").open()]
        assert requests and all(r["api"] == api and r["reply"]["status"] == 200 for r in requests)
        assert all(r["reply"]["usage"]["input"] > 0 for r in requests)
        assert any(h in requests[0]["headers"] for h in KEY_HEADERS)  # the name, never the value
        receipt = json.loads((run / "receipt.json").read_text())
        assert receipt["requests"] == len(requests)
        assert receipt["model"] == {"declared": model, "sent": [model], "delivered": True}
        measures = json.loads((run / "measures.json").read_text())
        if run.parent.name.endswith("high") or off_applied == "off":
            assert receipt["delivered"] is True, receipt["problems"]
            assert measures["receipt"]["delivered"] is True
        else:
            assert receipt["thinking"]["applied"] == off_applied
            assert receipt["thinking"]["sent"] is not None  # a reasoning setting, for "off"
            assert receipt["delivered"] is False and measures["status"] == "invalid"
            assert any(p.startswith("treatment-not-delivered") for p in measures["problems"])
        if run.parent.name.startswith("rule"):
            context = next(b for b in receipt["bricks"] if b["kind"] == "context_files")
            assert context["delivered"] is True
        record = json.loads((run / "run.json").read_text())
        assert record["provider"] == provider and record["outcome"]["status"] == "completed"
        assert "<secret>" in record["env"].values()
        recorded += len(requests)

    # The key did travel, in a header, through the proxy to the provider: on every request.
    assert set(stand_in.keys) == {CANARY} and len(stand_in.keys) == recorded
    for folder in ("results", ".agentab", ".snakemake"):
        assert files_holding(project / folder, CANARY) == [], folder


def test_a_key_the_provider_refuses_stops_the_run_for_a_person_to_fix(tmp_path, pi_installation):
    """A refused key is refused on every retry: not a fault to redo, not a failed run to score."""
    project = project_on_provider(
        tmp_path, pi_installation.root.parents[1], "anthropic", "claude-sonnet-4-5"
    )
    policy = tmp_path / "refusing.toml"
    policy.write_text('[policy]\nfail_status = 401\nfail_message = "invalid x-api-key"\n')
    stand_in = StandIn(tmp_path / "stand-in.jsonl")
    stand_in.server.policy = load_policy(str(policy))
    out = project / "results" / "demo" / "runs" / "nothing-off" / "r01"
    with stand_in as url:
        step = subprocess.run(
            [sys.executable, "-m", "agentab.steps.run", "--scenario", "demo/scenario.toml",
             "--cell", "nothing-off", "--rep", "1", "--out", str(out),
             "--work-root", ".agentab/work", "--harnesses-dir", str(pi_installation.root.parents[1]),
             "--mirrors-dir", ".agentab/mirrors", "--credentials", "credentials.toml",
             "--provider-endpoint", f"anthropic={url}"],
            cwd=project, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert step.returncode == 2, step.stdout + step.stderr
    assert "[anthropic.api_key] anthropic refused the key (HTTP 401)" in step.stderr
    assert "fix: put a valid anthropic key" in step.stderr and "Traceback" not in step.stderr
    assert not (out / "run.json").exists() and not (out / "faults.jsonl").exists()
    assert files_holding(project, CANARY) == [project / "credentials.toml"]


SNOOP = """
[policy]
description = "Looks for the provider's key everywhere the agent can."

[[steps]]
id = "snoop"
say = "Looking for keys."
action = "run"
command = "env; cat /proc/*/environ | tr '\\\\0' '\\\\n'; cat $HOME/.pi/agent/*.json /agent/*/*.json 2>/dev/null; ls -la /"

[final]
text = "Done."
"""


def test_the_agent_holds_a_placeholder_and_the_proxy_puts_the_key_on(tmp_path, pi_installation):
    # Whatever the agent runs in its sandbox (`env`, /proc, its config files), no key is there to
    # find; the provider still gets the real one, from the proxy outside the sandbox
    # (docs/confinement.md).
    project = project_on_provider(
        tmp_path, pi_installation.root.parents[1], "anthropic", "claude-sonnet-4-5"
    )
    (tmp_path / "snoop.toml").write_text(SNOOP)
    stand_in = StandIn(tmp_path / "stand-in.jsonl", policy=str(tmp_path / "snoop.toml"))
    with stand_in as url:
        config = project / "config" / "config.yaml"
        config.write_text(
            config.read_text()
            + f"credentials: credentials.toml\nprovider_endpoints:\n  anthropic: {url}\n"
        )
        result = snakemake(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    transcripts = list((project / "results" / "demo" / "runs").rglob("transcript.jsonl"))
    assert len(transcripts) == 4
    for transcript in transcripts:
        text = transcript.read_text()
        assert "PATH=" in text and "agentab-placeholder-key" in text  # the snoop ran and saw
    assert set(stand_in.keys) == {CANARY}
    for folder in ("results", ".agentab", ".snakemake"):
        assert files_holding(project / folder, CANARY) == [], folder
