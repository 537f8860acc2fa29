"""A scenario file's environment alone: what `agentab tasks mine --scenario` reads of it.

Mining needs how a checkout is made and tested, not what an experiment measures: `[etalon]`
setup, path and setup_timeout, `[validation] protect`, `[protocol] limits`, and the runner and
`tests` of its `mode = "tests"` validators. A file that holds only those is whole for it, and
a complete scenario is read the same way. What it holds is checked as a scenario's is (the
schema, the protected paths, the limits' sizes); only the keys an experiment must declare and
mining never reads (its name, the agent, the repetitions, the metrics, the etalon's repo and
tag) may be left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentab.confinement.limits import LIMITS_FIX, Limits, size_problem
from agentab.errors import ScenarioError
from agentab.scenario.durations import parse_duration
from agentab.scenario.rules import check_protected_paths
from agentab.scenario.source import Collector, read_toml, schema_problems
from agentab.scenario.types import Etalon

# What an experiment must declare and mining never reads: its absence is no problem here.
NOT_READ = (
    "scenario",
    "agent",
    "etalon",
    "protocol",
    "validation",
    "etalon.repo",
    "etalon.tag",
    "protocol.repetitions",
    "validation.metrics",
)


@dataclass(frozen=True)
class Environment:
    """How a checkout is made and tested, as a scenario file declares it."""

    etalon: Etalon | None  # its setup, path and setup_timeout; None without a setup
    protect: tuple[str, ...] | None  # `[validation] protect` (None: the default)
    limits: Limits | None  # `[protocol] limits`, when the file has them
    runner: str | None  # the first tests validator's runner
    suite: tuple[str, ...]  # the `tests` of its tests validators without hidden tests


class _EnvironmentProblems(Collector):
    def add(self, key: str, message: str, fix: str = "") -> None:
        if key in NOT_READ and message.startswith(f"`{key}` is missing"):
            return
        super().add(key, message, fix)


def load_environment(path: Path | str) -> Environment:
    """Read and check a scenario file's environment; ScenarioError lists every problem."""
    path = Path(path).absolute()
    data, text = read_toml(path)
    sink = _EnvironmentProblems(path, text)
    schema_problems(data, sink)
    if sink.problems:
        raise ScenarioError(sink.problems)
    validation, protocol = data.get("validation") or {}, data.get("protocol") or {}
    check_protected_paths({"validation": validation}, sink)
    table = protocol.get("limits")
    for key in ("memory", "disk", "patch") if table is not None else ():
        message = size_problem(table[key]) if key in table else None
        if message:
            sink.add(f"protocol.limits.{key}", f"`protocol.limits.{key}`: {message}", LIMITS_FIX)
    if sink.problems:
        raise ScenarioError(sink.problems)
    tests = [spec for spec in (data.get("validators") or {}).values() if spec["mode"] == "tests"]
    suite: list[str] = []
    for spec in tests:
        # A validator with hidden tests runs tests the history does not have.
        if not spec.get("hidden"):
            suite += [path for path in spec.get("tests", ()) if path not in suite]
    protect = validation.get("protect")
    return Environment(
        etalon=_etalon(data.get("etalon") or {}, path.parent),
        protect=tuple(protect) if protect is not None else None,
        limits=Limits.from_table(table) if table is not None else None,
        runner=tests[0]["runner"] if tests else None,
        suite=tuple(suite),
    )


def _etalon(raw: dict, folder: Path) -> Etalon | None:
    if not raw.get("setup") and not raw.get("path"):
        return None
    return Etalon(
        repo=raw.get("repo", ""),
        tag=raw.get("tag", ""),
        location=str(folder),
        setup=tuple(raw.get("setup") or ()),
        path=tuple(raw.get("path") or ()),
        setup_timeout_s=parse_duration(raw.get("setup_timeout", "10m")),
    )
