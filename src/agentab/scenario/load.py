"""Load a scenario file, check every load-time rule, and expand its cells.

A scenario is self-contained: everything that decides what is measured is read from this
one file and nothing else. All problems are collected and reported together, each naming
the file, the key and the fix, so that a person fixes a scenario in one pass and no agent
run starts from a scenario that is wrong. Reading the file is `source`, the rules are `rules`,
the types `types`; the package's `__init__` is their public interface.
"""

from __future__ import annotations

import re
from pathlib import Path

from agentab.budget.rule import check_budget
from agentab.errors import ScenarioError
from agentab.scenario import cells as cells_module
from agentab.scenario.durations import parse_duration
from agentab.scenario.names import check_slug_lengths
from agentab.scenario.providers import on_declared_providers, read_providers
from agentab.scenario.rules import (
    build_cell,
    check_cell_names,
    check_duplicate_cells,
    check_harness_support,
    check_limits_declared,
    check_matrix,
    check_no_op_settings,
    check_offline_policies,
    check_protected_paths,
    check_test_command,
    check_values,
    pick_reference,
    variants_as_lists,
)
from agentab.scenario.source import Collector, read_toml, schema_problems
from agentab.scenario.tasks import aa_cell, check_deltas_leave_the_task, read_tasks, run_cells
from agentab.scenario.types import AgentConfig, Etalon, Scenario, ValidatorSpec
from agentab.scenario.usage_names import check_usage_metrics
from agentab.scenario.validation import check_validators
from agentab.scenario.waves import check_stopping


def load_scenario(
    path: Path | str,
    *,
    check_etalon: bool = True,
    check_bricks: bool = True,
    check_schema: bool = True,
) -> Scenario:
    """Load and check a scenario; raise ScenarioError listing every problem found.

    A frozen copy (results/<name>/scenario.toml) loads with both checks off: it then needs
    neither its folder nor its repository, which is what rebuilding a synthesis relies on.
    A workflow step loads with `check_schema=False`: the workflow checked the file against the
    schema when it built the step's job, and checking it again in every job of every run costs
    more than the step's own work. Should the file have been broken since, the full check runs
    and says what is wrong.
    """
    path = Path(path).absolute()
    if not check_schema:
        try:
            return _load(path, check_etalon, check_bricks, check_schema=False)
        except (ScenarioError, LookupError, TypeError, AttributeError, ValueError, OSError):
            pass  # the full check below finds the same problem and names it well
    return _load(path, check_etalon, check_bricks, check_schema=True)


def load_scenario_for_step(path: Path | str, *, check_bricks: bool) -> Scenario:
    """The scenario as a workflow step loads it: the workflow checked the file, its schema and
    its etalon when it built the step's job (`check_schema=False` above)."""
    return load_scenario(path, check_etalon=False, check_bricks=check_bricks, check_schema=False)


def _load(path: Path, check_etalon: bool, check_bricks: bool, check_schema: bool) -> Scenario:
    data, text = read_toml(path)
    sink = Collector(path, text)
    if check_schema:
        schema_problems(data, sink)
    if sink.problems:
        raise ScenarioError(sink.problems)
    sc_dir = path.parent
    check_values(data, sink)
    check_stopping(data, sink)
    check_protected_paths(data, sink)
    check_test_command(data, sink)
    check_matrix(data, sink)
    check_validators(data, sc_dir, sink, check_bricks)

    prompt, tasks = read_tasks(data, sc_dir, sink, check_bricks)
    check_deltas_leave_the_task(data, sink)
    raw_agent = data["agent"]
    base_agent = AgentConfig(
        harness=raw_agent["harness"],
        version=raw_agent["version"],
        provider=raw_agent["provider"],
        model=raw_agent["model"],
        thinking=raw_agent["thinking"],
        timeout_s=parse_duration(raw_agent["timeout"]),
    )
    check_no_op_settings(data, base_agent, sink)
    drafts = cells_module.expand(
        data.get("axes", {}), data.get("deltas", {}), variants_as_lists(data.get("variants", {}))
    )
    cells = [
        build_cell(
            draft, data.get("deltas", {}), base_agent, prompt or "", sc_dir, sink, check_bricks
        )
        for draft in drafts
    ]
    cells = on_declared_providers(cells, read_providers(data, sink), sink)
    check_cell_names(cells, sink)
    check_slug_lengths(cells, sink)
    if check_bricks:
        check_duplicate_cells(cells, sink)
        check_harness_support(cells, sink)
        check_offline_policies(data, cells, sc_dir, sink)
        check_budget(data, cells, sink)
        check_limits_declared(data, sink)
        check_usage_metrics(data["validation"]["metrics"], cells, sink)
    reference = pick_reference(data, cells, sink)
    if data["protocol"].get("aa") and cells and not sink.problems:
        copy = aa_cell(cells, reference, sink)
        cells += [copy] if copy else []
    etalon = _etalon(data["etalon"], sc_dir)
    if check_etalon and not sink.problems:
        from agentab.etalon import etalon_problem  # late: keeps `synthesize` free of git

        message = etalon_problem(etalon.location, etalon.tag)
        if message:
            sink.add(
                "etalon.tag" if "tag" in message.key else "etalon.repo", message.text, message.fix
            )
        for task in tasks if not message else []:
            found = task.tag and etalon_problem(etalon.location, task.tag)
            if found:
                sink.add(f"tasks.{task.name}.tag", found.text, found.fix)
    if sink.problems:
        raise ScenarioError(sink.problems)
    return Scenario(
        path=path,
        name=data["scenario"]["name"],
        question=data["scenario"].get("question", ""),
        etalon=etalon,
        agent=base_agent,
        repetitions=data["protocol"]["repetitions"],
        reference=reference,
        metrics=list(data["validation"]["metrics"]),
        cells=cells,
        validators={
            name: ValidatorSpec(
                name=name, mode=spec["mode"], options={k: v for k, v in spec.items() if k != "mode"}
            )
            for name, spec in data.get("validators", {}).items()
        },
        raw=data,
        tasks=tasks,
        run_cells=run_cells(cells, tasks),
    )


def _etalon(raw: dict, sc_dir: Path) -> Etalon:
    repo = raw["repo"]
    is_url = re.match(r"^[a-z][a-z0-9+.-]*://", repo) or re.match(r"^[^/]+@[^/]+:", repo)
    location = repo if is_url else str((sc_dir / repo).resolve())
    return Etalon(
        repo=repo,
        tag=raw["tag"],
        location=location,
        setup=tuple(raw.get("setup") or ()),
        path=tuple(raw.get("path") or ()),
        setup_timeout_s=parse_duration(raw.get("setup_timeout", "10m")),
    )
