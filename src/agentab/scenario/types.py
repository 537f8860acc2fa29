"""What a loaded scenario is: its agent, etalon, bricks, validators and cells."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from agentab.confinement.limits import Limits
from agentab.errors import ScenarioError, problem
from agentab.etalon.protect import effective_protect
from agentab.scenario.providers import DeclaredProvider
from agentab.trajectory import tests_pattern


@dataclass(frozen=True)
class AgentConfig:
    harness: str
    version: str
    provider: str
    model: str
    thinking: str
    timeout_s: float
    # The `[providers.<name>]` declaration when `provider` names one (scenario/providers.py).
    endpoint: DeclaredProvider | None = None

    def as_dict(self) -> dict:
        # The declaration only when there is one: every other cell keeps the configuration,
        # and so the up-to-date runs, it had.
        endpoint = {"endpoint": self.endpoint.as_dict()} if self.endpoint else {}
        return {
            "harness": self.harness,
            "version": self.version,
            "provider": self.provider,
            "model": self.model,
            "thinking": self.thinking,
            "timeout_s": self.timeout_s,
            **endpoint,
        }

    @property
    def thinking_provider(self) -> str:
        """The provider as a harness judges what reasoning setting it sends: agentab writes a
        declared server's catalogue entry as it writes the offline model's, so a harness sends
        the level as it does to the offline model."""
        return "offline" if self.endpoint else self.provider

    @property
    def needs_key(self) -> bool:
        """Its runs read a key from the credentials file: a real provider agentab knows, or a
        declared server that asks for one (`key = true`); the offline model takes none."""
        if self.endpoint is not None:
            return self.endpoint.key
        return self.provider != "offline"


@dataclass(frozen=True)
class Etalon:
    repo: str  # as written in the scenario
    tag: str
    location: str  # absolute path or URL
    setup: tuple[str, ...] = ()  # shell commands run in every fresh checkout (docs/scenario.md)
    path: tuple[str, ...] = ()  # folders of the checkout put first on PATH
    setup_timeout_s: float = 600.0

    def as_param(self) -> dict:
        """What of the etalon decides a run: its setup only when it has one, so that a scenario
        without setup keeps the params (and the up-to-date runs) it had."""
        param = {"repo": self.repo, "tag": self.tag}
        if self.setup or self.path:
            param |= {"setup": list(self.setup), "path": list(self.path)}
        return param


@dataclass(frozen=True)
class Brick:
    kind: str
    rel: str
    path: Path
    sha256: str

    def as_dict(self) -> dict:
        return {"kind": self.kind, "rel": self.rel, "sha256": self.sha256}


@dataclass(frozen=True)
class ValidatorSpec:
    name: str
    mode: str
    options: dict

    def as_dict(self) -> dict:
        return {"name": self.name, "mode": self.mode, **self.options}


@dataclass(frozen=True)
class Cell:
    name: str
    slug: str
    is_baseline: bool
    is_variant: bool
    delta: dict[str, str]
    settings: dict  # the merged delta as written (relative brick paths, scalars)
    agent: AgentConfig
    prompt: str
    bricks: list[Brick]
    task: str = ""  # the task of a run cell (scenario.run_cells) of a scenario with [tasks.*]
    tag: str = ""  # that task's own etalon tag, when it has one
    is_aa: bool = False  # the A/A copy of the reference ([protocol] aa = true)

    def run_config(self) -> dict:
        """What decides this cell's agent runs: a change here, and only here, reruns them."""
        return {
            "agent": self.agent.as_dict(),
            "prompt_sha256": hashlib.sha256(self.prompt.encode()).hexdigest(),
            "bricks": [brick.as_dict() for brick in self.bricks],
        }

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "slug": self.slug,
            "baseline": self.is_baseline,
            "variant": self.is_variant,
            **({"aa": True} if self.is_aa else {}),
            "delta": self.delta,
            "settings": self.settings,
            "agent": self.agent.as_dict(),
            "bricks": [brick.as_dict() for brick in self.bricks],
        }


@dataclass
class Scenario:
    path: Path
    name: str
    question: str
    etalon: Etalon
    agent: AgentConfig
    repetitions: int
    reference: str
    metrics: list[str]
    cells: list[Cell]
    validators: dict[str, ValidatorSpec]
    raw: dict = field(repr=False)
    tasks: list = field(default_factory=list)  # [tasks.<name>] (scenario.tasks.Task); [] for [task]
    run_cells: list[Cell] = field(default_factory=list)  # a cell per cell × task (the cells)

    @property
    def dir(self) -> Path:
        return self.path.parent

    @property
    def task_names(self) -> list[str]:
        """Each task's name; [""] for a scenario with one [task]."""
        return [task.name for task in self.tasks] or [""]

    @property
    def run_count(self) -> int:
        return len(self.run_cells) * self.repetitions

    def run_cell(self, slug: str) -> Cell:
        """The cell of a run folder's slug (`<cell slug>--<task>` with tasks)."""
        for cell in self.run_cells:
            if cell.slug == slug:
                return cell
        known = [cell.slug for cell in self.run_cells]
        raise ScenarioError(
            problem(
                self.path,
                "cells",
                f"no cell (or cell and task) with the runs folder {slug!r}",
                f"use one of: {', '.join(known)}",
            )
        )

    def task_of(self, cell: Cell):
        """The `[tasks.<name>]` a run cell runs (`scenario.tasks.Task`), or None."""
        return next((task for task in self.tasks if task.name == cell.task), None)

    def etalon_for(self, cell: Cell) -> Etalon:
        """The etalon a run of this (run) cell clones: its task's own tag, if it has one."""
        return replace(self.etalon, tag=cell.tag) if cell.tag else self.etalon

    @property
    def budget_usd(self) -> float | None:
        """`[protocol] budget_usd`: what its runs may spend; None without a budget."""
        budget = (self.raw.get("protocol") or {}).get("budget_usd")
        return None if budget is None else float(budget)

    @property
    def stopping(self) -> str:
        """`[protocol] stopping`: "fixed" (the default) or "sequential"."""
        return (self.raw.get("protocol") or {}).get("stopping", "fixed")

    @property
    def sequential(self) -> bool:
        return self.stopping == "sequential"

    @property
    def wave(self) -> int:
        """Runs per cell (and task) in each wave; a fixed scenario is one wave of them all."""
        return int((self.raw.get("protocol") or {}).get("wave") or self.repetitions)

    @property
    def waves(self) -> int:
        """The most waves a cell can get: `repetitions` / `wave`."""
        return max(1, self.repetitions // self.wave)

    @property
    def decide(self) -> list[str]:
        """The metrics whose gaps decide when a cell stops (sequential)."""
        return list((self.raw.get("protocol") or {}).get("decide") or self.metrics)

    @property
    def protect(self) -> tuple[str, ...]:
        """The etalon's paths that belong to the measurement: `[validation] protect` (or a
        Python project's test folders when it has none) and what a test runner reads."""
        return effective_protect((self.raw.get("validation") or {}).get("protect"))

    @property
    def test_command(self) -> str:
        """What starts a command that runs the tests, for the behaviour measures: `[validation]
        test_command`, else the runner of the scenario's `tests` validators."""
        given = (self.raw.get("validation") or {}).get("test_command")
        runners = [v.options.get("runner") for v in self.validators.values() if v.mode == "tests"]
        return given or tests_pattern(runners)

    @property
    def limits(self) -> Limits | None:
        """`[protocol] limits`: what each run may take of the machine (None in a frozen copy
        from before limits were declared: such a scenario only synthesizes)."""
        table = (self.raw.get("protocol") or {}).get("limits")
        return None if table is None else Limits.from_table(table)

    def cell(self, name_or_slug: str) -> Cell:
        for cell in self.cells:
            if name_or_slug in (cell.name, cell.slug):
                return cell
        known = [cell.slug for cell in self.cells]
        raise ScenarioError(
            problem(
                self.path,
                "cells",
                f"no cell named {name_or_slug!r}",
                f"use one of: {', '.join(known)}",
            )
        )

    def as_dict(self) -> dict:
        return {
            "scenario": self.name,
            "file": str(self.path),
            "question": self.question,
            "etalon": {"repo": self.etalon.repo, "tag": self.etalon.tag},
            "agent": self.agent.as_dict(),
            "repetitions": self.repetitions,
            "reference": self.reference,
            "metrics": self.metrics,
            "cells": [cell.as_dict() for cell in self.cells],
            **({"tasks": [task.as_dict() for task in self.tasks]} if self.tasks else {}),
            "runs": self.run_count,
            "validators": {name: spec.as_dict() for name, spec in self.validators.items()},
        }
