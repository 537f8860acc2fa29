"""A request the agent's own tools send to its model endpoint (a `curl` from bash) is recorded,
marked `"origin": "tool"`, and never counted by the receipt: the real pi binary, confined, on
the offline model, and on a real provider's API through the recording proxy (the offline model
standing in for the provider).

The curl names another model and asks for no reasoning: counted as a turn, it would make the
receipt say that the model and the thinking level of the cell never reached the model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentab.confinement.endpoint import ENDPOINT_URL
from agentab.offline_model import OfflineModelServer, load_policy
from agentab.offline_model.local_server import serving
from tests.e2e.harness_world import (
    HARNESSES_DIR,
    PI_VERSION,
    Scenario,
    make_etalon,
    new_world,
    run_step,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CANARY = "sk-canary-0c5e1f7a9b3d"
CURL_BODIES = {
    "openai-chat": (
        "/v1/chat/completions",
        {"model": "curl-model", "messages": [{"role": "user", "content": "hi from a tool"}]},
    ),  # fmt: skip
    "anthropic-messages": (
        "/v1/messages",
        {
            "model": "curl-model",
            "max_tokens": 20,
            "messages": [{"role": "user", "content": "hi from a tool"}],
        },
    ),  # fmt: skip
}


def curl_policy(api: str) -> str:
    """pi's first bash call curls the endpoint it was given, then the policy runs the tests."""
    path, body = CURL_BODIES[api]
    command = (
        f"curl -s -X POST {ENDPOINT_URL}{path} -H 'Content-Type: application/json' "
        f"-H 'x-api-key: mine' -d '{json.dumps(body)}'"
    )
    return f"""
[policy]
description = "Sends its own request to the model endpoint from bash."

[[steps]]
id = "curl"
say = "Calling my endpoint myself."
action = "run"
command = {json.dumps(command)}

[[steps]]
id = "tests"
say = "Running the tests."
action = "run"
command = "python3 -m unittest"

[final]
text = "Done."
"""


def provider_step(
    world: dict, scenario: Path, url: str
) -> tuple[subprocess.CompletedProcess, Path]:
    """The run step for the baseline cell on anthropic, reached at `url` through its proxy."""
    root = world["root"]
    out = root / "results" / "baseline" / "r01"
    credentials = root / "credentials.toml"
    credentials.write_text(f'[anthropic]\napi_key = "{CANARY}"\n')
    argv = [sys.executable, "-m", "agentab.steps.run", "--scenario", str(scenario)]
    argv += [
        "--cell",
        "baseline",
        "--rep",
        "1",
        "--out",
        str(out),
        "--work-root",
        str(root / "work"),
    ]
    argv += ["--harnesses-dir", str(HARNESSES_DIR), "--mirrors-dir", str(root / "mirrors")]
    argv += ["--credentials", str(credentials), "--provider-endpoint", f"anthropic={url}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=root)
    return done, out


@pytest.mark.parametrize("provider", ["offline", "anthropic"])
def test_a_request_the_agent_sends_from_bash_is_recorded_as_the_tools_and_not_counted(
    tmp_path, pi_installation, provider
):
    world = new_world(tmp_path)
    root = world["root"]
    make_etalon(root / "etalon", lambda folder: None)
    api = "openai-chat" if provider == "offline" else "anthropic-messages"
    (root / "curl.toml").write_text(curl_policy(api))
    scenario = Scenario("origin", "Is a tool's request told apart?", "pi", PI_VERSION)
    path = scenario.write_in(root, "curl.toml", "high", "2m")
    if provider == "offline":
        done, out = run_step(world, path, "baseline")
    else:
        text = path.read_text().replace('provider = "offline"', 'provider = "anthropic"')
        path.write_text(re.sub(r'model = "curl.toml"', 'model = "claude-sonnet-4-5"', text))
        stand_in = OfflineModelServer(
            load_policy(str(root / "curl.toml")), 7, tmp_path / "s.jsonl", harness="pi"
        )
        with serving(stand_in, "stand-in") as url:
            done, out = provider_step(world, path, url)
    assert done.returncode == 0, done.stderr[-3000:]

    lines = [json.loads(line) for line in (out / "model-requests.jsonl").read_text().splitlines()]
    assert [line["origin"] for line in lines] == ["harness", "tool", "harness", "harness"]
    curl = lines[1]
    assert curl["api"] == api and curl["body"]["model"] == "curl-model"
    assert curl["reply"]["status"] == 200  # recorded and answered, not refused
    assert [line["at"] for line in lines] == sorted(line["at"] for line in lines)

    receipt = json.loads((out / "receipt.json").read_text())
    assert receipt["requests"] == 3
    assert [(r["seq"], r["model"]) for r in receipt["tool_requests"]] == [(2, "curl-model")]
    assert receipt["delivered"] is True, receipt["problems"]
    assert "curl-model" not in receipt["model"]["sent"]
    record = json.loads((out / "run.json").read_text())
    assert record["receipt"]["tool_requests"] == 1 and record["receipt"]["requests"] == 3
    transcript = (out / "transcript.jsonl").read_text()
    results = [json.loads(line) for line in transcript.splitlines()]
    answered = next(r for r in results if r.get("type") == "tool_result")
    assert "curl-model" in answered["output"]  # the model answered the curl
    assert CANARY not in answered["output"] and CANARY not in transcript


OTHER_HARNESSES = [
    ("gemini", "gemini_installation"),
    ("codex", "codex_installation"),
    ("claude-code", "claude_installation"),
]


@pytest.mark.parametrize(
    ("harness", "installed"), OTHER_HARNESSES, ids=[h for h, _ in OTHER_HARNESSES]
)
def test_on_every_other_harness_a_curl_from_its_shell_is_the_tools_and_its_own_requests_not(
    tmp_path, request, harness, installed
):
    """Each harness names its tool calls its own way (Gemini by the function's name): the
    harness's own requests must all stay the harness's."""
    installation = request.getfixturevalue(installed)
    world = new_world(tmp_path)
    root = world["root"]
    make_etalon(root / "etalon", lambda folder: None)
    (root / "curl.toml").write_text(curl_policy("openai-chat"))
    scenario = Scenario("origin", "Is a tool's request told apart?", harness, installation.version)
    done, out = run_step(world, scenario.write_in(root, "curl.toml", "off", "3m"), "baseline")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in (out / "model-requests.jsonl").read_text().splitlines()]
    assert [line["origin"] for line in lines] == ["harness", "tool", "harness", "harness"]
    assert lines[1]["body"]["model"] == "curl-model"
    receipt = json.loads((out / "receipt.json").read_text())
    assert receipt["requests"] == 3 and len(receipt["tool_requests"]) == 1
    assert receipt["delivered"] is True, receipt["problems"]
