"""What the Snakemake workflow asks the package: targets, paths and each rule's own params.

A rule gets only its own slice of the scenario as `params`, because Snakemake reruns a job
when its params change: the agent-run params hold only what decides an agent run (never the
validators), a validator's params only that validator, so editing a validator never reruns an
agent run, and editing the metric contract reruns only the measures and the synthesis.

The config reaching `Workflow.from_config` has been validated, and filled with its defaults, by
`config/config.schema.yaml` (Snakemake's `validate`): that schema is the one config check.
"""

from __future__ import annotations

import inspect
import json
import shlex
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import agentab
from agentab.budget import NOT_STARTED
from agentab.budget.on_start import budget_summary
from agentab.confinement.bwrap import BWRAP, require_sandbox
from agentab.errors import AgentabError, ScenarioError, problem
from agentab.harnesses import module_name
from agentab.layout import Layout, rep_folder
from agentab.run.frozen_inputs import agent_inputs, validator_files_param
from agentab.run.policy_check import policy_edit_problems
from agentab.run.recording_proxy import endpoint_for
from agentab.scenario import Scenario, load_scenario
from agentab.validators import CONFIG_KEYS, MODE_MODULES, RUNS_RUN_CODE, validator_timeout_s
from agentab.workflow.capacity import ServerCap, cell_slots, server_caps

# The package files that decide the synthesis: editing one reruns only the synthesis.
# Besides every module of agentab/synthesis/: it was a list of some of them, and modules added
# later (the frontier, the judge against people, the distributions of the shuffles) were left out of
# it, so a synthesis written by older code was kept after an upgrade.
SYNTHESIS_CODE = ("metrics.py", "templates/synthesis.md.j2")


def as_param(data) -> str:
    """A stable text for a params value: the same settings give the same text, in any order."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


@dataclass
class Workflow:
    """The scenarios of one workflow invocation, loaded and checked once, and their layout."""

    scenarios: dict[str, Scenario]
    scenario_paths: dict[str, str]  # as the config gives them: a moved project reruns nothing
    layout: Layout
    config: dict

    @classmethod
    def from_config(cls, config: dict, config_file: str = "config/config.yaml") -> Workflow:
        scenarios: dict[str, Scenario] = {}
        scenario_paths: dict[str, str] = {}
        for path in config["scenarios"]:
            scenario = load_scenario(path)
            if scenario.name in scenarios:
                raise AgentabError(
                    problem(
                        path,
                        "scenario.name",
                        f"two scenarios are named `{scenario.name}`; both would write "
                        f"results/{scenario.name}/",
                        "rename one of them",
                    )
                )
            scenarios[scenario.name] = scenario
            scenario_paths[scenario.name] = str(path)
        check_provider_endpoints(scenarios.values(), config.get("provider_endpoints") or {})
        require_sandbox(config.get("confinement") or BWRAP, config_file)
        state = Path(config["state"])
        check_policy_edits(scenarios.values(), state / "mirrors")
        layout = Layout(
            results_root=Path(config["results"]),
            state=state,
            harnesses=Path(config.get("harnesses") or state / "harnesses"),
        )
        return cls(scenarios, scenario_paths, layout, config)

    # ------------------------------------------------------------------ targets

    def runs(self, scenario: str) -> list[tuple[str, str]]:
        """(cell slug, repetition folder) of every run of a scenario, in rendered order."""
        sc = self.scenarios[scenario]
        return [
            (cell.slug, rep_folder(rep))
            for cell in sc.run_cells
            for rep in range(1, sc.repetitions + 1)
        ]

    def targets(self) -> list[str]:
        """Everything `snakemake` with no target builds: each scenario's synthesis and forms."""
        files = []
        for name in self.scenarios:
            results = self.layout.results(name)
            files += [str(path) for path in results.outputs()]
            files += [str(results.blank_form(v)) for v in self.form_validators(name)]
        return files

    def all_measures(self, scenario: str) -> list[str]:
        """Every run's measures.json: the input of the synthesis, the report and the forms."""
        return self._all_measures[scenario]

    @cached_property
    def _all_measures(self) -> dict[str, list[str]]:
        return {
            name: [str(self.layout.run(name, cell, rep).measures) for cell, rep in self.runs(name)]
            for name in self.scenarios
        }

    # ------------------------------------------------------------------ waves

    def is_sequential(self, scenario: str) -> bool:
        return self.scenarios[scenario].sequential

    def wave_count(self, scenario: str) -> int:
        """The most waves a cell can get (1 for a fixed scenario)."""
        return self.scenarios[scenario].waves

    def cell_names(self, scenario: str) -> list[str]:
        return [cell.name for cell in self.scenarios[scenario].cells]

    def wave_measures(self, scenario: str, wave: int, cells: list[str]) -> list[str]:
        """The measures.json of wave `wave`'s runs of the cells named (each of their tasks)."""
        sc = self.scenarios[scenario]
        first = (wave - 1) * sc.wave + 1
        wanted = set(cells)
        return [
            str(self.layout.run(scenario, cell.slug, rep_folder(rep)).measures)
            for cell in sc.run_cells
            if cell.name in wanted
            for rep in range(first, first + sc.wave)
        ]

    def wave_decision(self, scenario: str, wave: int) -> str:
        return str(self.layout.results(scenario).wave_decision(wave))

    def all_validator_outputs(self, scenario: str) -> list[str]:
        """Every scored validator output of every run: what a filled form is checked against.

        With waves, those of the runs made so far only: which runs a wave holds depends on the
        decisions, and those on the measures, which read the filled forms."""
        if self.is_sequential(scenario):
            return [path for path in self._validator_outputs(scenario) if Path(path).exists()]
        return self._validator_outputs(scenario)

    def _validator_outputs(self, scenario: str) -> list[str]:
        return [
            str(self.layout.run(scenario, cell, rep).validator_output(v))
            for cell, rep in self.runs(scenario)
            for v in self.scored_validators(scenario)
        ]

    # ------------------------------------------------------------------ per rule

    def scenario_file(self, scenario: str) -> str:
        return self.scenario_paths[scenario]

    # Input functions and params run once per job: at 10 000 runs, 60 000 times. What they
    # answer depends on the scenario, the cell or the validator only, so it is worked out once.

    def harness_marker(self, scenario: str, cell: str) -> str:
        return self._per_cell[scenario, cell][0]

    def run_params(self, scenario: str, cell: str) -> str:
        return self._run_params[scenario, cell]

    @cached_property
    def _run_params(self) -> dict[tuple[str, str], str]:
        return {
            (name, c.slug): as_param(
                {
                    "etalon": sc.etalon_for(c).as_param(),
                    **c.run_config(),
                    "limits": _limits_param(sc),
                    **_policy_param(sc, c),
                }
            )
            for name, sc in self.scenarios.items()
            for c in sc.run_cells
        }

    @cached_property
    def _per_cell(self) -> dict[tuple[str, str], tuple[str, int]]:
        """(scenario, cell slug) -> (its harness marker, its time limit in minutes)."""
        return {
            (name, c.slug): (
                str(self.layout.harness_marker(c.agent.harness, c.agent.version)),
                _minutes_with_margin(c.agent.timeout_s + setup_time_s(sc.etalon)),
            )
            for name, sc in self.scenarios.items()
            for c in sc.run_cells
        }

    @cached_property
    def server_caps(self) -> dict[str, ServerCap]:
        """The model servers whose declaration caps the agents run against them at once."""
        return server_caps(self.scenarios.values())

    def provider_resources(self) -> list[str]:
        """The resource of each capped server (`provider_<name>`): the agent-run rule's."""
        return sorted({cap.resource for cap in self.server_caps.values()})

    def provider_slot(self, scenario: str, cell: str, resource: str) -> int:
        """1 when the cell's agent runs against the server of `resource`, else 0."""
        return int(self._cell_slots.get((scenario, cell)) == resource)

    @cached_property
    def _cell_slots(self) -> dict[tuple[str, str], str]:
        return cell_slots(self.scenarios.values(), self.server_caps)

    def timeout_minutes(self, scenario: str, cell: str) -> int:
        """An agent-run job's time limit on a cluster: the scenario's timeout, with room."""
        return self._per_cell[scenario, cell][1]

    def validator_minutes(self, scenario: str, validator: str) -> int:
        """A validator job's time limit on a cluster: its own timeout, with room to check out."""
        return self._per_validator[scenario, validator][1]

    @cached_property
    def _per_validator(self) -> dict[tuple[str, str], tuple[str, int]]:
        """(scenario, validator) -> (its params, its time limit in minutes)."""
        table = {}
        for name, sc in self.scenarios.items():
            for validator, spec in sc.validators.items():
                files = validator_files_param(sc, spec)
                decided = {"validator": spec.as_dict(), "files": files}
                if sc.etalon.setup or sc.etalon.path:  # its checkout is set up too
                    decided["etalon"] = sc.etalon.as_param()
                if spec.mode in RUNS_RUN_CODE:  # its checkout, and the run's code in it
                    decided["protect"] = list(sc.protect)
                    decided["limits"] = _limits_param(sc)
                if spec.mode == "tests" and sc.tasks:  # each task's tests to run
                    decided["tasks"] = [task.as_dict() for task in sc.tasks]
                limit = validator_timeout_s(spec) + setup_time_s(sc.etalon)
                table[name, validator] = (as_param(decided), _minutes_with_margin(limit))
        return table

    def warm_modules(self) -> list[str]:
        """What the step server imports once for every step of a run: the steps, each harness
        adapter and each validator kind the scenarios use (a judge's SDK takes seconds)."""
        cells = [c for sc in self.scenarios.values() for c in sc.cells]
        specs = [spec for sc in self.scenarios.values() for spec in sc.validators.values()]
        return sorted(
            {"agentab.steps.run", "agentab.steps.validate", "agentab.steps.measure"}
            | {f"agentab.harnesses.{module_name(c.agent.harness)}" for c in cells}
            | {
                f"agentab.validators.{MODE_MODULES[s.mode]}"
                for s in specs
                if s.mode in MODE_MODULES
            }
        )

    def scored_validators(self, scenario: str) -> list[str]:
        """Validators with a job per run (script and judge); forms are filled by a person."""
        return [n for n, s in self.scenarios[scenario].validators.items() if s.mode != "form"]

    def form_validators(self, scenario: str) -> list[str]:
        return [n for n, s in self.scenarios[scenario].validators.items() if s.mode == "form"]

    def validator_params(self, scenario: str, validator: str) -> str:
        return self._per_validator[scenario, validator][0]

    def credentials_argument(self) -> str:
        """`--credentials FILE` for the run step when the config names one, else nothing."""
        path = self.config.get("credentials")
        return f"--credentials {shlex.quote(str(Path(path).absolute()))}" if path else ""

    def provider_endpoints_argument(self) -> str:
        """`--provider-endpoint PROVIDER=URL` per configured provider: operational (where a
        provider is reached changes no run's configuration), so on the command line."""
        endpoints = self.config.get("provider_endpoints") or {}
        return " ".join(
            f"--provider-endpoint {shlex.quote(f'{provider}={url}')}"
            for provider, url in sorted(endpoints.items())
        )

    def confinement_argument(self) -> str:
        """` --confinement none` for the run and validate steps when the config says so, else
        nothing: the default leaves a step's command, its code trigger, as it was."""
        mode = self.config.get("confinement") or BWRAP
        return "" if mode == BWRAP else f" --confinement {mode}"

    def judge_settings(self) -> dict:
        """The config keys judges read, as the config gives them."""
        return {k: self.config[k] for k in CONFIG_KEYS if self.config.get(k) is not None}

    def measure_params(self, scenario: str) -> str:
        return self._measure_params[scenario]

    @cached_property
    def _measure_params(self) -> dict[str, str]:
        return {
            name: as_param(
                {
                    "metrics": sc.metrics,
                    "validators": {n: s.mode for n, s in sc.validators.items()},
                    "protect": list(sc.protect),  # the built-in protected_edits
                }
            )
            for name, sc in self.scenarios.items()
        }

    def filled_forms(self, scenario: str) -> list[str]:
        """The checked answers of every filled form: an input of every measure job, so filling
        a form updates the measures."""
        return self._filled_forms[scenario]

    @cached_property
    def _filled_forms(self) -> dict[str, list[str]]:
        table = {}
        for name in self.scenarios:
            results = self.layout.results(name)
            table[name] = [
                str(results.form_answers(v))
                for v in self.form_validators(name)
                if results.filled_form(v).exists()
            ]
        return table

    def synthesis_code(self) -> list[str]:
        """The package files that decide the synthesis: editing one reruns only the synthesis."""
        root = Path(agentab.__file__).parent
        # The synthesis and the statistics it calls (agentab.stats), subpackages included.
        folders = (root / "synthesis", root / "stats")
        modules = sorted(str(path) for folder in folders for path in folder.rglob("*.py"))
        return modules + [str(root / n) for n in SYNTHESIS_CODE if (root / n).exists()]


def setup_time_s(etalon) -> float:
    """What the etalon's setup may add to a job's time limit."""
    return etalon.setup_timeout_s if etalon.setup else 0.0


def check_provider_endpoints(scenarios, endpoints: dict[str, str]) -> None:
    """Every real provider a cell names has an endpoint its recording proxy can forward to (a
    declared server has its own url)."""
    for scenario in scenarios:
        for cell in scenario.cells:
            if cell.agent.provider != "offline" and cell.agent.endpoint is None:
                endpoint_for(cell.agent.provider, endpoints)


def check_policy_edits(scenarios, mirrors: Path) -> None:
    """Every offline policy's steps played on its tags' files: a step that would fail in every
    run stops the workflow before anything runs, as `agentab check` refuses it."""
    problems = [found for sc in scenarios for found in policy_edit_problems(sc, mirrors)]
    if problems:
        raise ScenarioError(problems)


def measured_summary(workflow: Workflow) -> str:
    """One line per scenario: runs measured of runs planned, by status, why runs are invalid,
    and where to read."""
    lines = []
    for name in workflow.scenarios:
        statuses: dict[str, int] = {}
        reasons: dict[str, int] = {}
        for path in workflow.all_measures(name):
            try:
                data = json.loads(Path(path).read_text(encoding="utf-8"))
                status = str(data.get("status", "?"))
            except (OSError, ValueError, AttributeError):
                continue
            statuses[status] = statuses.get(status, 0) + 1
            if status == "invalid":
                problems = data.get("problems") or ["no reason recorded"]
                reason = problems[0] if isinstance(problems, list) else problems
                reasons[str(reason)] = reasons.get(str(reason), 0) + 1
        not_started = statuses.pop(NOT_STARTED, 0)
        done = sum(statuses.values())
        counts = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) or "none yet"
        synthesis = workflow.layout.results(name).output("synthesis.md")
        planned = len(workflow.runs(name))
        of = f" of at most {planned}" if workflow.is_sequential(name) else f"/{planned}"
        lines.append(
            f"agentab: {name}: {done}{of} runs measured ({counts})"
            + budget_summary(workflow, name, not_started)
            + invalid_summary(reasons)
            + (f"; read {synthesis}" if synthesis.exists() else "")
        )
    return "\n".join(lines)


SHOWN_REASON_CHARS = 240


def invalid_summary(reasons: dict[str, int]) -> str:
    """`; invalid: <the most frequent reason> (N runs)`, and how many other reasons; "" when
    no run is invalid. A run's reason names the validator and what it did wrong."""
    if not reasons:
        return ""
    reason, runs = max(reasons.items(), key=lambda item: (item[1], item[0]))
    reason = " ".join(reason.split())
    if len(reason) > SHOWN_REASON_CHARS:
        reason = reason[: SHOWN_REASON_CHARS - 1] + "…"
    others = len(reasons) - 1
    more = f", and {others} other reason{'s' * (others != 1)}" if others else ""
    return f"; invalid: {reason} ({runs} run{'s' * (runs != 1)}{more})"


def _limits_param(scenario) -> dict | None:
    return scenario.limits.as_dict() if scenario.limits else None


def _minutes_with_margin(seconds: float) -> int:
    # Whole minutes, plus five for the clone or checkout around the timed part.
    return max(1, int(seconds // 60) + 5)


def _policy_param(scenario, cell) -> dict:
    """The cell's offline policy file by its hash, when it has one: editing it reruns exactly
    the runs it serves. A shipped policy is agentab's code: none (the params stay as they were)."""
    found = [item for item in agent_inputs(scenario, cell) if not item.shipped]
    return {"policy": found[0].as_dict()} if found else {}


def state_signatures_once(rules) -> int:
    """Tell Snakemake the parameters of every function a rule gives it, once.

    For every job Snakemake asks `inspect.signature` of each input, param and resource
    function, several times over: at 2 000 runs, 132 000 signatures, about a tenth of a dry
    run. Snakemake reads a function's parameters from an attribute first when it is set (its
    own helpers set it), so each function's are worked out here once and kept there. Nothing
    a job gets changes: the values are inspect's own. Returns how many functions were told.
    """
    try:
        from snakemake.common import FUNC_OVERWRITE_PARAMS_ATTR
    except ImportError:  # another Snakemake: it inspects, as before
        return 0
    told = 0
    for function in _rule_functions(rules):
        if not hasattr(function, FUNC_OVERWRITE_PARAMS_ATTR):
            setattr(function, FUNC_OVERWRITE_PARAMS_ATTR, inspect.signature(function).parameters)
            told += 1
    return told


def _rule_functions(rules):
    for rule in rules:
        resources = getattr(rule, "resources", None) or {}
        evaluators = (getattr(resource, "_evaluator", None) for resource in resources.values())
        for item in (*rule.input, *rule.params, *evaluators):
            # A function, or a path flagged by a function (`ancient(f)`) that holds it.
            for candidate in (item, getattr(getattr(item, "_file", None), "callable", None)):
                if inspect.isfunction(candidate):
                    yield candidate
