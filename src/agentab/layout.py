"""Where every file agentab writes lives: the one spelling of the results layout.

Every module, every workflow rule and every command asks this module for a path; none writes a
folder or file name of its own. A path is built from parts joined as paths, never concatenated.

```
results/<scenario>/                  ResultsFolder
  scenario.toml                      the scenario exactly as it was run
  bricks/<hash>/ inputs/<hash>/      its bricks and other inputs, frozen
  synthesis.md cells.csv gaps.csv measures.csv gaps.svg frontier.svg
  report/                            the static HTML report
  forms/<v>.blank.toml <v>.toml <v>.material/
  .form-keys/<v>.json <v>.answers.json
  logs/<step>.log
  runs/<cell slug>/r<NN>/            RunFolder (with [tasks.*]: runs/<cell slug>--<task>/r<NN>/)
    run.json stream.jsonl transcript.jsonl result.patch model-requests.jsonl receipt.json
    measures.json trajectory.json faults.jsonl agent-stderr.log
    validators/<v>.json validators/<v>/   (a validator's output, its audit)
    logs/<step>.log
<state>/                             Layout (the workflow's own folders)
  mirrors/ work/<random>/ harnesses/<harness>/<version>/installed.json
```

The methods accept a repetition as a number (3 → `r03`) or as text, so that the workflow rules
can pass Snakemake wildcards (`"{rep}"`) through the same functions.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

SYNTHESIS_FILES = (
    "synthesis.md",
    "cells.csv",
    "gaps.csv",
    "measures.csv",
    "gaps.svg",
    "frontier.svg",
)


def rep_folder(rep: int | str) -> str:
    """`r03` for repetition 3; text (a folder name or a wildcard) is kept as it is."""
    return rep if isinstance(rep, str) else f"r{rep:02d}"


def run_id(slug: str, rep: int | str) -> str:
    """A run's name in every output: `<cell slug>/r<NN>`."""
    return f"{slug}/{rep_folder(rep)}"


# Between a cell's slug and a task's name in the folder of a run of a scenario with tasks:
# `runs/<cell slug>--<task>/r<NN>/`. A slug never holds `--`, so the name splits back.
TASK_JOINER = "--"


def task_run_slug(slug: str, task: str) -> str:
    """The folder name of a cell's runs of one task; the cell's slug when there is no task."""
    return f"{slug}{TASK_JOINER}{task}" if task else slug


def split_run_slug(folder: str) -> tuple[str, str]:
    """(cell slug, task) of a run folder's cell part; the task is "" without one."""
    slug, _, task = folder.partition(TASK_JOINER)
    return slug, task


def opaque_token(secret: str, *parts: object) -> str:
    """A folder name that tells nothing of what it is for: a digest of the parts and a secret."""
    text = "\0".join([secret, *(str(part) for part in parts)])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class RunFolder:
    """results/<scenario>/runs/<cell slug>/r<NN>/: every file of one run."""

    path: Path

    @property
    def results(self) -> ResultsFolder:
        """The results folder this run belongs to (results/<scenario>/runs/<slug>/rNN)."""
        return ResultsFolder(self.path.parents[2])

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def record(self) -> Path:
        return self.path / "run.json"

    @property
    def stream(self) -> Path:
        return self.path / "stream.jsonl"

    @property
    def transcript(self) -> Path:
        return self.path / "transcript.jsonl"

    @property
    def trajectory(self) -> Path:
        """The run in ATIF, written by the measure step (agentab.trajectory)."""
        return self.path / "trajectory.json"

    @property
    def patch(self) -> Path:
        return self.path / "result.patch"

    @property
    def model_requests(self) -> Path:
        return self.path / "model-requests.jsonl"

    @property
    def receipt(self) -> Path:
        return self.path / "receipt.json"

    @property
    def measures(self) -> Path:
        return self.path / "measures.json"

    @property
    def faults(self) -> Path:
        return self.path / "faults.jsonl"

    @property
    def agent_stderr(self) -> Path:
        return self.path / "agent-stderr.log"

    @property
    def agent_lock(self) -> Path:
        return self.path / "agent.lock"

    @property
    def earlier_attempts(self) -> Path:
        """Where the request log of an attempt that did not finish is kept, apart and named so."""
        return self.path / "earlier-attempts"

    def validator_output(self, validator: str) -> Path:
        return self.path / "validators" / f"{validator}.json"

    def validator_audit(self, validator: str) -> Path:
        return self.path / "validators" / validator

    def validator_lock(self, validator: str) -> Path:
        return self.path / "validators" / f".{validator}.lock"

    def log(self, step: str) -> Path:
        return self.path / "logs" / f"{step}.log"

    def benchmark(self, step: str) -> Path:
        return self.path / "logs" / f"{step}.benchmark.tsv"

    # Files a run step leaves: removing these (and what follows) makes the run be redone.
    def agent_outputs(self) -> list[Path]:
        return [
            self.record,
            self.stream,
            self.transcript,
            self.patch,
            self.model_requests,
            self.receipt,
            self.agent_stderr,
        ]


@dataclass(frozen=True)
class ResultsFolder:
    """results/<scenario>/: the frozen scenario, the synthesis, the forms and every run."""

    path: Path

    @property
    def frozen_scenario(self) -> Path:
        return self.path / "scenario.toml"

    def output(self, name: str) -> Path:
        """One of SYNTHESIS_FILES."""
        return self.path / name

    def outputs(self) -> list[Path]:
        return [self.output(name) for name in SYNTHESIS_FILES]

    @property
    def runs_root(self) -> Path:
        return self.path / "runs"

    @property
    def bricks(self) -> Path:
        """The frozen bricks: each one its runs were given, once, by its hash."""
        return self.path / "bricks"

    @property
    def inputs(self) -> Path:
        """The other frozen inputs (offline policies, rubrics, schemas, a validator's own
        files): each one its runs and validators used, once, by its hash."""
        return self.path / "inputs"

    def wave_decision(self, wave) -> Path:
        """A sequential scenario's decision after a wave: which cells get the next one."""
        return self.path / "waves" / f"wave-{wave}.json"

    @property
    def budget_ledger(self) -> Path:
        """What the runs spent and what those in flight may spend (`[protocol] budget_usd`)."""
        return self.path / "budget.json"

    @property
    def budget_lock(self) -> Path:
        """Held (flock) by whoever changes the ledger: runs in parallel, on any node."""
        return self.path / ".budget.lock"

    def cell_folder(self, slug: str) -> Path:
        return self.runs_root / slug

    def run(self, slug: str, rep: int | str) -> RunFolder:
        return RunFolder(self.runs_root / slug / rep_folder(rep))

    def run_by_id(self, run: str) -> RunFolder:
        slug, _, rep = run.partition("/")
        return self.run(slug, rep)

    def log(self, step: str) -> Path:
        return self.path / "logs" / f"{step}.log"

    @property
    def forms(self) -> Path:
        return self.path / "forms"

    def blank_form(self, validator: str) -> Path:
        return self.forms / f"{validator}.blank.toml"

    def filled_form(self, validator: str) -> Path:
        return self.forms / f"{validator}.toml"

    def form_material(self, validator: str) -> Path:
        return self.forms / f"{validator}.material"

    def form_keys(self, validator: str) -> Path:
        """The id -> run mapping of a form: outside forms/, so the person filling it never sees
        it beside the form."""
        return self.path / ".form-keys" / f"{validator}.json"

    def form_answers(self, validator: str) -> Path:
        """A filled form's answers, checked once, for the measure jobs."""
        return self.path / ".form-keys" / f"{validator}.answers.json"

    @property
    def report(self) -> Path:
        return self.path / "report"

    @property
    def workflow_lock(self) -> Path:
        """Held (flock) by the Snakemake that writes in this folder, for as long as it runs."""
        return self.path / ".workflow.lock"

    @property
    def secret(self) -> Path:
        """A random secret of this results folder: opaque run ids are digests keyed on it."""
        return self.path / ".secret"

    @property
    def invocation(self) -> Path:
        """The last `snakemake` command that ran jobs on this folder, where and for which
        scenario file: the command `agentab redo` prints."""
        return self.path / ".invocation.json"


@dataclass(frozen=True)
class Layout:
    """The folders of one workflow invocation: results, and agentab's own state."""

    results_root: Path
    state: Path
    harnesses: Path

    def results(self, scenario: str) -> ResultsFolder:
        return ResultsFolder(self.results_root / scenario)

    def run(self, scenario: str, slug: str, rep: int | str) -> RunFolder:
        return self.results(scenario).run(slug, rep)

    @property
    def mirrors(self) -> Path:
        return self.state / "mirrors"

    @property
    def work(self) -> Path:
        """Private folders of agent runs and validators (clones, checkouts, HOME), each under a
        random name per attempt: no path an agent or a validator works in names its cell."""
        return self.state / "work"

    def harness_marker(self, harness: str, version: str) -> Path:
        return self.harnesses / harness / version / "installed.json"

    def verified_files(self, scenario: str) -> Path:
        """The per-run files the repair at start found well-formed, by content hash."""
        return self.state / "verified" / f"{scenario}.json"

    @property
    def step_server_log(self) -> Path:
        """What the step server of the last local invocation said (it says little)."""
        return self.state / "logs" / "step-server.log"

    def install_log(self, harness: str, version: str) -> Path:
        return self.state / "logs" / f"install-{harness}-{version}.log"
