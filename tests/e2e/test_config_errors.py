"""A config that breaks its schema stops the workflow with agentab's one-line error, not
Snakemake's jsonschema dump."""

from __future__ import annotations

import pytest

from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e]


def test_scenarios_given_as_a_path_not_a_list_is_one_line_with_its_fix(tmp_path) -> None:
    project = make_project(tmp_path / "project", tmp_path / "no-harnesses", repetitions=1)
    done = snakemake(project, "-n", "--config", "scenarios=demo/scenario.toml", listing=False)
    assert done.returncode != 0
    assert "agentab: nothing runs." in done.stderr
    assert (
        "config/config.yaml (with --config): [scenarios] 'demo/scenario.toml' is not of type "
        "'array'\n  fix: give a list, quoted for the shell: --config "
        "'scenarios=[\"scenarios/demo/scenario.toml\"]'"
    ) in done.stderr
    for dump in ("Failed validating", "On instance", "ValidationError", "Traceback"):
        assert dump not in done.stderr, done.stderr
