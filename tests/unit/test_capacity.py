"""A declared server's concurrency as a Snakemake resource: its name, its cap, who holds it."""

from __future__ import annotations

from types import SimpleNamespace

from snakemake.resources import Resources

from agentab.scenario.providers import DeclaredProvider
from agentab.workflow.capacity import cap_resources, cell_slots, resource_name, server_caps


def provider(name: str, url: str, concurrency: int | None) -> DeclaredProvider:
    return DeclaredProvider(name, url, "openai-completions", concurrency=concurrency)


def scenario(name: str, cells: dict[str, DeclaredProvider | None]):
    run_cells = [
        SimpleNamespace(slug=slug, agent=SimpleNamespace(endpoint=endpoint))
        for slug, endpoint in cells.items()
    ]
    return SimpleNamespace(name=name, run_cells=run_cells)


def test_one_server_one_resource_capped_at_the_smallest_declared() -> None:
    a = scenario("a", {"base": provider("local", "http://127.0.0.1:8080", 2), "off": None})
    b = scenario("b", {"base": provider("llama", "http://127.0.0.1:8080", 1)})
    c = scenario("c", {"base": provider("other", "http://127.0.0.1:9090", None)})
    caps = server_caps([a, b, c])
    assert list(caps) == ["http://127.0.0.1:8080"]  # an undeclared concurrency: no cap
    (cap,) = caps.values()
    assert (cap.resource, cap.most) == ("provider_local", 1)
    assert cap.declared_by == ("a: [providers.local]", "b: [providers.llama]")
    assert cell_slots([a, b, c], caps) == {
        ("a", "base"): "provider_local",
        ("b", "base"): "provider_local",
    }


def test_a_resource_name_is_a_word() -> None:
    assert resource_name("local-qwen.7b") == "provider_local_qwen_7b"


class FakeWorkflow:
    def __init__(self, given: dict[str, int]):
        self.global_resources = Resources.from_mapping(given)

    def register_resource(self, name, value):
        self.global_resources[name] = value


def test_the_command_line_can_lower_the_cap_never_raise_it() -> None:
    caps = server_caps([scenario("a", {"base": provider("local", "http://h:1", 2)})])
    raised = FakeWorkflow({"provider_local": 5})
    (line,) = cap_resources(raised, caps)
    assert raised.global_resources["provider_local"].value == 2
    assert (
        line
        == "agentab: at most 2 agent runs at a time against a: [providers.local] (its concurrency)"
    )
    lowered = FakeWorkflow({"provider_local": 1})
    cap_resources(lowered, caps)
    assert lowered.global_resources["provider_local"].value == 1
    unset = FakeWorkflow({})
    cap_resources(unset, caps)
    assert unset.global_resources["provider_local"].value == 2
