"""What the Snakemake workflow asks the package: targets, paths and each rule's own params.

A rule gets only its own slice of the scenario as `params`, because Snakemake reruns a job
when its params change: the agent-run params hold only what decides an agent run (never the
validators), a validator's params only that validator, so editing a validator never reruns an
agent run, and editing the metric contract reruns only the measures and the synthesis.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import agentab
from agentab.errors import AgentabError, problem
from agentab.measures import rep_folder
from agentab.scenario import Scenario, content_sha256, load_scenario

SYNTHESIS_FILES = ("synthesis.md", "cells.csv", "gaps.csv", "measures.csv", "gaps.png", "gaps.svg")
DEFAULTS = {"results": "results", "state": ".agentab"}


def as_param(data) -> str:
    """A stable text for a params value: the same settings give the same text, in any order."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


@dataclass
class Plan:
    """The scenarios of one workflow invocation, loaded and checked once."""

    scenarios: dict[str, Scenario]
    scenario_paths: dict[str, str]  # as the config gives them: a moved project reruns nothing
    results: Path
    state: Path
    harnesses: Path
    config: dict

    @classmethod
    def from_config(cls, config: dict, config_file: str = "config/config.yaml") -> Plan:
        paths = config.get("scenarios") or []
        if isinstance(paths, str):
            paths = [paths]
        if not paths:
            raise AgentabError(
                problem(
                    config_file,
                    "scenarios",
                    "no scenario to run",
                    "list scenario files under `scenarios:` (e.g. scenarios/demo/scenario.toml)",
                )
            )
        scenarios: dict[str, Scenario] = {}
        scenario_paths: dict[str, str] = {}
        for path in paths:
            scenario = load_scenario(path)
            if scenario.name in scenarios:
                raise AgentabError(
                    problem(
                        path,
                        "scenario.name",
                        f"two scenarios are named `{scenario.name}`; both would write results/{scenario.name}/",
                        "rename one of them",
                    )
                )
            scenarios[scenario.name] = scenario
            scenario_paths[scenario.name] = str(path)
        state = Path(config.get("state") or DEFAULTS["state"])
        return cls(
            scenarios=scenarios,
            scenario_paths=scenario_paths,
            results=Path(config.get("results") or DEFAULTS["results"]),
            state=state,
            harnesses=Path(config.get("harnesses") or state / "harnesses"),
            config=config,
        )

    # ------------------------------------------------------------------ paths

    def results_dir(self, scenario: str) -> Path:
        return self.results / scenario

    def run_dir(self, scenario: str, cell: str, rep: str) -> Path:
        return self.results_dir(scenario) / "runs" / cell / rep

    def targets(self) -> list[str]:
        """Everything `snakemake` with no target builds: each scenario's synthesis and forms."""
        files = []
        for name in self.scenarios:
            files += [str(self.results_dir(name) / f) for f in SYNTHESIS_FILES]
            files += [
                str(self.results_dir(name) / "forms" / f"{v}.blank.toml")
                for v in self.form_validators(name)
            ]
        return files

    def runs(self, scenario: str) -> list[tuple[str, str]]:
        sc = self.scenarios[scenario]
        return [
            (cell.slug, rep_folder(rep))
            for cell in sc.cells
            for rep in range(1, sc.repetitions + 1)
        ]

    def all_measures(self, scenario: str) -> list[str]:
        return [
            str(self.run_dir(scenario, cell, rep) / "measures.json")
            for cell, rep in self.runs(scenario)
        ]

    # ------------------------------------------------------------------ per rule

    def scenario_file(self, scenario: str) -> str:
        return self.scenario_paths[scenario]

    def harness_marker(self, scenario: str, cell: str) -> str:
        agent = self.scenarios[scenario].cell(cell).agent
        return str(self.harnesses / agent.harness / agent.version / "installed.json")

    def run_params(self, scenario: str, cell: str) -> str:
        sc = self.scenarios[scenario]
        etalon = {"repo": sc.etalon.repo, "tag": sc.etalon.tag}
        return as_param({"etalon": etalon, **self._run_config(scenario, cell)})

    @cached_property
    def _cell_configs(self) -> dict:
        return {
            (name, c.slug): c.run_config() for name, sc in self.scenarios.items() for c in sc.cells
        }

    def _run_config(self, scenario: str, cell: str) -> dict:
        return self._cell_configs[(scenario, cell)]

    def timeout_minutes(self, scenario: str, cell: str) -> int:
        """An agent-run job's time limit on a cluster: the scenario's timeout, with room."""
        return _minutes_with_margin(self.scenarios[scenario].cell(cell).agent.timeout_s)

    def validator_minutes(self, scenario: str, validator: str) -> int:
        """A validator job's time limit on a cluster: its own timeout, with room to check out."""
        from agentab.scenario import parse_duration
        from agentab.validators.script import DEFAULT_TIMEOUT_S

        spec = self.scenarios[scenario].validators[validator]
        return _minutes_with_margin(parse_duration(spec.options.get("timeout", DEFAULT_TIMEOUT_S)))

    def scored_validators(self, scenario: str) -> list[str]:
        """Validators with a job per run (script and judge); forms are filled by a person."""
        return [n for n, s in self.scenarios[scenario].validators.items() if s.mode != "form"]

    def form_validators(self, scenario: str) -> list[str]:
        return [n for n, s in self.scenarios[scenario].validators.items() if s.mode == "form"]

    def validator_params(self, scenario: str, validator: str) -> str:
        sc = self.scenarios[scenario]
        spec = sc.validators[validator]
        files = {rel: _digest(sc.dir / rel) for rel in _validator_files(spec)}
        return as_param({"validator": spec.as_dict(), "files": files})

    def credentials_argument(self) -> str:
        """`--credentials FILE` for the run step when the config names one, else nothing."""
        path = self.config.get("credentials")
        return f"--credentials {shlex.quote(str(Path(path).absolute()))}" if path else ""

    def judge_settings(self) -> dict:
        """The config keys judges read (validators.CONFIG_KEYS), as the config gives them."""
        from agentab.validators import CONFIG_KEYS

        return {k: self.config[k] for k in CONFIG_KEYS if self.config.get(k) is not None}

    def measure_params(self, scenario: str) -> str:
        sc = self.scenarios[scenario]
        return as_param(
            {"metrics": sc.metrics, "validators": {n: s.mode for n, s in sc.validators.items()}}
        )

    def filled_forms(self, scenario: str) -> list[str]:
        """The checked answers of every filled form: an input of every measure job, so filling
        a form updates the measures."""
        from agentab.validators.form import checked_answers_path, filled_form_path

        results = self.results_dir(scenario)
        return [
            str(checked_answers_path(results, v))
            for v in self.form_validators(scenario)
            if filled_form_path(results, v).exists()
        ]

    def all_validator_outputs(self, scenario: str) -> list[str]:
        """Every scored validator output of every run: what a filled form is checked against."""
        return [
            str(self.run_dir(scenario, cell, rep) / "validators" / f"{v}.json")
            for cell, rep in self.runs(scenario)
            for v in self.scored_validators(scenario)
        ]

    def synthesis_code(self) -> list[str]:
        """The package files that decide the synthesis: editing one reruns only the synthesis."""
        root = Path(agentab.__file__).parent
        names = ["synthesis.py", "stats.py", "metrics.py", "templates/synthesis.md.j2"]
        return [str(root / n) for n in names if (root / n).exists()]


def measured_summary(plan: Plan) -> str:
    """One line per scenario: runs measured of runs planned, by status, and where to read."""
    lines = []
    for name in plan.scenarios:
        statuses: dict[str, int] = {}
        for path in plan.all_measures(name):
            try:
                status = json.loads(Path(path).read_text(encoding="utf-8")).get("status", "?")
            except (OSError, ValueError):
                continue
            statuses[status] = statuses.get(status, 0) + 1
        done = sum(statuses.values())
        counts = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) or "none yet"
        synthesis = plan.results_dir(name) / "synthesis.md"
        lines.append(
            f"agentab: {name}: {done}/{len(plan.runs(name))} runs measured ({counts})"
            + (f"; read {synthesis}" if synthesis.exists() else "")
        )
    return "\n".join(lines)


def _minutes_with_margin(seconds: float) -> int:
    # Whole minutes, plus five for the clone or checkout around the timed part.
    return max(1, int(seconds // 60) + 5)


def _validator_files(spec) -> list[str]:
    if spec.mode == "script":
        return [spec.options["run"][0]]
    if spec.mode == "judge":
        return [spec.options["rubric_file"], spec.options["schema_file"]]
    return []


def _digest(path: Path) -> str:
    return content_sha256(path) if path.exists() else "(not a file: a command on PATH)"
