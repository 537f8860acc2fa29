"""A server the scenario declares (`[providers.<name>]`): read with the scenario, carried with
each cell's run configuration, refused with its key and fix when it cannot be used, written into
the harness's catalogue, and asked by `agentab check` which models it serves."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from pathlib import Path

import pytest

from agentab.budget.costs import model_price
from agentab.cli import main
from agentab.commands.credentials_check import providers_needing_keys
from agentab.commands.provider_check import served_models, server_check
from agentab.harnesses.base import Installation, RunSpec
from agentab.harnesses.claude_code import ClaudeCodeHarness
from agentab.harnesses.pi import PiHarness
from agentab.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "local-model"
DEMO = SCENARIO.parent / "demo"


@pytest.fixture
def local(tmp_path: Path) -> Path:
    shutil.copytree(SCENARIO, tmp_path / "local-model")
    shutil.copy2(DEMO / "calc.bundle", tmp_path / "calc.bundle")
    edit(tmp_path / "local-model", 'repo = "../demo/calc.bundle"', 'repo = "../calc.bundle"')
    return tmp_path / "local-model"


def edit(folder: Path, old: str, new: str) -> None:
    path = folder / "scenario.toml"
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def refused(folder: Path, capsys) -> str:
    code = main(["check", "--no-etalon", "--no-server", str(folder / "scenario.toml")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and "fix: " in err
    return err


def test_each_cell_carries_the_declaration_into_its_run_configuration(local: Path) -> None:
    scenario = load_scenario(local / "scenario.toml", check_etalon=False)
    for cell in scenario.cells:
        endpoint = cell.agent.as_dict()["endpoint"]
        assert endpoint["url"] == "http://127.0.0.1:8080"
        assert endpoint["api"] == "openai-completions" and endpoint["max_tokens"] == 1024
        assert not cell.agent.needs_key
    assert providers_needing_keys(scenario) == {}
    price = model_price(local, scenario.cells[0].agent)
    assert (price.input, price.output) == (0.0, 0.0)
    # Changing what the harness is told of the model changes every cell's configuration.
    before = [cell.agent.as_dict() for cell in scenario.cells]
    edit(local, "max_tokens = 1024", "max_tokens = 512")
    after = [
        c.agent.as_dict() for c in load_scenario(local / "scenario.toml", check_etalon=False).cells
    ]
    assert before != after


def test_a_cell_on_a_provider_agentab_knows_has_no_endpoint(tmp_path: Path) -> None:
    shutil.copytree(DEMO, tmp_path / "demo")
    scenario = load_scenario(tmp_path / "demo" / "scenario.toml", check_etalon=False)
    assert all("endpoint" not in cell.agent.as_dict() for cell in scenario.cells)


@pytest.mark.parametrize(
    ("old", "new", "key", "words"),
    [
        ("[providers.local]", "[providers.openai]", "[providers.openai]", "agentab knows already"),
        (
            'url = "http://127.0.0.1:8080"',
            'url = "http://127.0.0.1:8080/v1"',
            "[providers.local.url]",
            "has a path",
        ),
        (
            'url = "http://127.0.0.1:8080"',
            'url = "localhost:8080"',
            "[providers.local.url]",
            "not an http(s) origin",
        ),
        ('api = "openai-completions"', 'api = "ollama"', "providers.local.api", "ollama"),
        ('provider = "local"', 'provider = "offline"', "[providers.local]", "changes nothing"),
        ('thinking = "off"', 'thinking = "high"', "[providers.local.reasoning]", "drops the level"),
    ],
)
def test_a_declaration_that_cannot_be_used_is_refused(local, capsys, old, new, key, words) -> None:
    if new == 'provider = "offline"':
        edit(local, 'model = "qwen2.5-coder"', 'model = "demo"')
    edit(local, old, new)
    err = refused(local, capsys)
    assert key in err and words in err, err


def test_a_harness_that_cannot_speak_the_api_is_refused(local, capsys) -> None:
    edit(local, 'harness = "pi"', 'harness = "codex"')
    err = refused(local, capsys)
    assert "[providers.local.api]" in err and "codex cannot be pointed" in err


def test_a_key_is_asked_of_the_credentials_file_only_when_declared(local: Path) -> None:
    edit(local, "reasoning = false", "reasoning = false\nkey = true")
    scenario = load_scenario(local / "scenario.toml", check_etalon=False)
    assert providers_needing_keys(scenario) == {"local": "the agent of cell 'nothing'"}


def spec(tmp_path: Path, scenario, api: str = "openai-completions") -> RunSpec:
    cell = scenario.cells[0]
    endpoint = cell.agent.endpoint
    if api != endpoint.api:
        from dataclasses import replace

        endpoint = replace(endpoint, api=api)
    return RunSpec(
        clone=tmp_path / "clone", scratch=tmp_path / "scratch", prompt="Fix it.",
        provider="local", model="smollm2", thinking="off", timeout_s=60.0,
        model_base_url="http://127.0.0.1:4000", endpoint=endpoint, model_can_reason=False,
        model_price={"input": 0.0, "output": 0.0},
    )  # fmt: skip


def test_pi_gets_the_server_in_its_catalogue_at_the_recording_proxy(local, tmp_path) -> None:
    scenario = load_scenario(local / "scenario.toml", check_etalon=False)
    installation = Installation("pi", "1.6.0", tmp_path, tmp_path / "cli.js")
    invocation = PiHarness().prepare(spec(tmp_path, scenario), installation)
    (models,) = [text for path, text in invocation.files.items() if path.name == "models.json"]
    provider = json.loads(models)["providers"]["local"]
    assert provider["baseUrl"] == "http://127.0.0.1:4000/v1"  # the proxy, never the server
    assert provider["api"] == "openai-completions"
    (model,) = provider["models"]
    assert model["id"] == "smollm2" and model["contextWindow"] == 8192
    assert model["maxTokens"] == 1024 and model["reasoning"] is False
    assert model["cost"]["input"] == 0.0
    assert not invocation.secret_env  # no key of any provider in its environment
    assert invocation.argv[invocation.argv.index("--provider") + 1] == "local"
    anthropic = PiHarness().prepare(spec(tmp_path, scenario, "anthropic-messages"), installation)
    (models,) = [text for path, text in anthropic.files.items() if path.name == "models.json"]
    assert json.loads(models)["providers"]["local"]["baseUrl"] == "http://127.0.0.1:4000"


def test_claude_code_reaches_a_declared_anthropic_server_at_the_proxy(local, tmp_path) -> None:
    scenario = load_scenario(local / "scenario.toml", check_etalon=False)
    installation = Installation("claude-code", "2.1.332", tmp_path, tmp_path / "cli.js")
    run = spec(tmp_path, scenario, "anthropic-messages")
    invocation = ClaudeCodeHarness().prepare(run, installation)
    assert invocation.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:4000"
    assert invocation.env["ANTHROPIC_API_KEY"] == "agentab"


class Listing(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self):
        status = 200 if self.path == "/v1/models" else 404
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body if status == 200 else b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def listing_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Listing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_served_models_are_read_from_the_listing(listing_server) -> None:
    _, url = listing_server
    Listing.body = json.dumps(
        {"data": [{"id": "/models/smol.gguf", "aliases": ["smollm2"]}, {"id": "qwen2.5:0.5b"}]}
    ).encode()
    assert served_models(url).models == {"/models/smol.gguf", "smollm2", "qwen2.5:0.5b"}
    Listing.body = b"<html>not json</html>"
    assert "not JSON" in served_models(url).trouble
    Listing.body = b'{"models": []}'
    assert "lists no models" in served_models(url).trouble
    assert "no server answers" in served_models("http://127.0.0.1:9").trouble


def test_check_names_the_key_when_the_model_is_not_served(local, listing_server, capsys) -> None:
    _, url = listing_server
    Listing.body = json.dumps({"data": [{"id": "qwen3"}]}).encode()
    edit(local, 'url = "http://127.0.0.1:8080"', f'url = "{url}"')
    scenario = load_scenario(local / "scenario.toml", check_etalon=False)
    problems, lines = server_check(scenario)
    (found,) = problems  # once, though two cells name the model
    assert found.key == "agent.model" and "serves no model `qwen2.5-coder`" in found.message
    assert lines == [f"server      local at {url} serves: qwen3"]
    Listing.body = json.dumps({"data": [{"id": "qwen2.5-coder"}]}).encode()
    assert main(["check", "--no-etalon", str(local / "scenario.toml")]) == 0
    assert f"local at {url} serves: qwen2.5-coder" in capsys.readouterr().out
