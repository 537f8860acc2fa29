"""Load a scenario file, check every load-time rule, and expand its cells.

A scenario is self-contained: everything that decides what is measured is read from this
one file and nothing else. All problems are collected and reported together, each naming
the file, the key and the fix, so that a person fixes a scenario in one pass and no agent
run starts from a scenario that is wrong.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path

import jsonschema

from agentab import cells as cells_module
from agentab.cells import BRICK_KINDS, CellPlan, slugify
from agentab.errors import Problem, ScenarioError, problem

AGENT_SCALARS = ("thinking", "model", "provider")


@dataclass(frozen=True)
class AgentConfig:
    harness: str
    version: str
    provider: str
    model: str
    thinking: str
    timeout_s: float

    def as_dict(self) -> dict:
        return {
            "harness": self.harness,
            "version": self.version,
            "provider": self.provider,
            "model": self.model,
            "thinking": self.thinking,
            "timeout_s": self.timeout_s,
        }


@dataclass(frozen=True)
class Etalon:
    repo: str  # as written in the scenario
    tag: str
    location: str  # absolute path or URL


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

    @property
    def dir(self) -> Path:
        return self.path.parent

    @property
    def run_count(self) -> int:
        return len(self.cells) * self.repetitions

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
            "runs": self.run_count,
            "validators": {name: spec.as_dict() for name, spec in self.validators.items()},
        }


# ---------------------------------------------------------------------------- parsing


class _Collector:
    """Gathers problems against one file, with the line of a key where the text shows it."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = _key_lines(text)
        self.problems: list[Problem] = []

    def add(self, key: str, message: str, fix: str = "") -> None:
        found = problem(self.path, key, message, fix, self.line_of(key))
        if found not in self.problems:  # a brick shared by several cells is reported once
            self.problems.append(found)

    def line_of(self, key: str) -> int | None:
        parts = key.split(".")
        while parts:
            line = self.lines.get(tuple(parts))
            if line is not None:
                return line
            parts.pop()
        return None


_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_ASSIGN = re.compile(r'^\s*("[^"]*"|[A-Za-z0-9_-]+)\s*=')


def _split_dotted(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip('"') for part in re.findall(r'"[^"]*"|[^.]+', text))


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Map each table and key path to its line, for error messages (tomllib keeps no lines)."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = _split_dotted(header.group(1))
            lines.setdefault(table, number)
            continue
        assign = _ASSIGN.match(line)
        if assign:
            lines.setdefault(table + (assign.group(1).strip('"'),), number)
    return lines


def _read_toml(path: Path) -> tuple[dict, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(
            problem(
                path, "", "no such scenario file", "check the path (scenarios/<name>/scenario.toml)"
            )
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(problem(path, "", f"cannot read the file: {error}")) from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"line (\d+)", str(error))
        raise ScenarioError(
            problem(
                path,
                "",
                f"not valid TOML: {error}",
                "fix the syntax at that line (strings need quotes, tables [like.this])",
                int(found.group(1)) if found else None,
            )
        ) from None


@cache
def scenario_schema() -> dict:
    schema_file = resources.files("agentab") / "schema" / "scenario.schema.json"
    return json.loads(schema_file.read_text(encoding="utf-8"))


def _schema_at(path: list) -> dict:
    """The sub-schema that describes the object at a path of the document (best effort)."""
    node = scenario_schema()
    for part in path:
        properties = node.get("properties", {})
        if part in properties:
            node = properties[part]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return {}
        while "$ref" in node:
            node = scenario_schema()["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _known_keys(path: list, instance: dict) -> list[str]:
    node = _schema_at(path)
    keys = list(node.get("properties", {}))
    for branch in node.get("allOf", []):
        mode = instance.get("mode")
        if branch["if"]["properties"]["mode"]["const"] == mode:
            keys = list(branch["then"]["properties"])
    return keys


def _dotted(path) -> str:
    return ".".join(str(part) for part in path)


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else f"known keys: {', '.join(choices)}"


REQUIRED_FIXES = {
    "scenario": '[scenario]\nname = "my-experiment"',
    "task": '[task] with prompt = "..." or prompt_file = "task.md"',
    "etalon": '[etalon] with repo = "<path, URL or bundle>" and tag = "<a tag>"',
    "agent": "[agent] with harness, version, provider, model, thinking and timeout",
    "protocol": "[protocol] with repetitions = <an integer ≥ 1>",
    "validation": '[validation] with metrics = ["..."]',
    "harness": 'harness = "pi"',
    "version": 'version = "1.6.0" (the exact version to run; any other is refused)',
    "provider": 'provider = "anthropic" (or "offline" for the local model)',
    "model": 'model = "<a pinned model id>"',
    "thinking": 'thinking = "off" (one of off, minimal, low, medium, high, xhigh, max)',
    "timeout": 'timeout = "15m"',
    "repetitions": "repetitions = 10",
    "metrics": 'metrics = ["tests_pass"]',
}


def _schema_problems(data: dict, sink: _Collector) -> None:
    validator = jsonschema.Draft202012Validator(scenario_schema())
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.path))):
        path = list(error.path)
        key = _dotted(path)
        if error.validator == "additionalProperties":
            known = _known_keys(path, error.instance)
            for extra in sorted(set(error.instance) - set(known)):
                where = _dotted(path + [extra])
                sink.add(
                    where,
                    f"unknown key `{where}`",
                    f"{_did_you_mean(extra, known)} (unknown keys are refused so a typo is never ignored)",
                )
        elif error.validator == "required":
            missing = re.search(r"'([^']+)' is a required property", error.message)
            name = missing.group(1) if missing else error.message
            where = _dotted(path + [name])
            sink.add(
                where,
                f"`{where}` is missing; it decides what is measured, so it has no default",
                f"add {REQUIRED_FIXES.get(name, name)}",
            )
        elif error.validator in ("allOf", "oneOf", "anyOf") and error.context:
            best = jsonschema.exceptions.best_match(error.context)
            sink.add(key, f"`{key}`: {best.message}", _type_fix(path))
        else:
            sink.add(key or "(top)", f"`{key}`: {error.message}", _type_fix(path))


def _type_fix(path: list) -> str:
    last = str(path[-1]) if path else ""
    hints = {
        "repetitions": "repetitions is an integer ≥ 1, e.g. repetitions = 10",
        "timeout": 'a duration such as "90s", "15m", "1h", or an integer of seconds',
        "thinking": "one of off, minimal, low, medium, high, xhigh, max",
        "mode": 'mode is "script", "judge" or "form"',
        "name": "letters, digits, '.', '_' and '-' only (it names results/<name>/)",
    }
    return hints.get(last, "see docs/scenario.md for the format of this key")


# ---------------------------------------------------------------------------- rules


def parse_duration(value: float | str) -> float:
    if isinstance(value, int | float):
        return float(value)
    number, unit = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*([smh])", value.strip()).groups()
    return float(number) * {"s": 1, "m": 60, "h": 3600}[unit]


def _variants_as_lists(raw: dict) -> dict[str, dict[str, list[str]]]:
    return {
        name: {
            dim: ([values] if isinstance(values, str) else list(values))
            for dim, values in choice.items()
        }
        for name, choice in raw.items()
    }


def _check_matrix(data: dict, sink: _Collector) -> None:
    axes = data.get("axes", {})
    deltas = data.get("deltas", {})
    variants = _variants_as_lists(data.get("variants", {}))
    used: set[tuple[str, str]] = set()
    for dimension, values in axes.items():
        baseline = values[0]
        if baseline in deltas.get(dimension, {}):
            sink.add(
                f"deltas.{dimension}.{baseline}",
                f"`{baseline}` is the baseline of axis `{dimension}` (its first value) and may not declare a delta",
                f"remove [deltas.{dimension}.{baseline}], or put another value first in axes.{dimension}",
            )
        for value in values[1:]:
            used.add((dimension, value))
            if value not in deltas.get(dimension, {}):
                sink.add(
                    f"axes.{dimension}",
                    f"axis value `{value}` of `{dimension}` declares no delta: it would be a silent duplicate of the baseline",
                    f"add [deltas.{dimension}.{_quote(value)}], or fix the spelling of the value"
                    + _suggest(value, list(deltas.get(dimension, {}))),
                )
    for name, choice in variants.items():
        for dimension, values in choice.items():
            for value in values:
                if dimension in axes and value == axes[dimension][0]:
                    continue
                used.add((dimension, value))
                if value not in deltas.get(dimension, {}):
                    sink.add(
                        f"variants.{name}.{dimension}",
                        f"variant `{name}` names `{dimension} = {value}`, which has no delta",
                        f"declare [deltas.{dimension}.{_quote(value)}], or use one of the declared values"
                        + _suggest(value, list(deltas.get(dimension, {}))),
                    )
    for dimension, values in deltas.items():
        for value in values:
            if (dimension, value) not in used and not (
                dimension in axes and value == axes[dimension][0]
            ):
                sink.add(
                    f"deltas.{dimension}.{value}",
                    f"delta `{dimension}.{value}` is used by no axis and no variant (a misspelling?)",
                    f"add `{value}` to axes.{dimension} or to a variant, or remove the delta"
                    + _suggest(value, axes.get(dimension, [])),
                )


def _quote(value: str) -> str:
    return value if re.fullmatch(r"[A-Za-z0-9_-]+", value) else json.dumps(value)


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def content_sha256(path: Path) -> str:
    """A file's hash, or a folder's: every file's relative path and bytes, in sorted order."""
    digest = hashlib.sha256()
    if path.is_file():
        digest.update(path.read_bytes())
        return digest.hexdigest()
    for child in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(child.relative_to(path).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(child.read_bytes()).digest())
    return digest.hexdigest()


def _resolve_relative(base: Path, rel: str, key: str, sink: _Collector, check: bool) -> Path | None:
    path = (base / rel).resolve() if check else base / rel
    if not check:
        return path
    if not _inside(path, base):
        sink.add(
            key,
            f"`{rel}` escapes the scenario's folder",
            "keep every file the scenario uses inside its folder, so the scenario stays self-contained",
        )
        return None
    if not path.exists():
        sink.add(
            key,
            f"`{rel}` does not exist (looked for {path})",
            "fix the path; it is relative to the scenario file",
        )
        return None
    return path


def _task_prompt(owner: dict, base: Path, key: str, sink: _Collector, check: bool) -> str | None:
    if "prompt" in owner and "prompt_file" in owner:
        sink.add(key, "both `prompt` and `prompt_file` are set", "keep one of them")
        return None
    if "prompt" in owner:
        return owner["prompt"]
    if "prompt_file" in owner:
        path = _resolve_relative(base, owner["prompt_file"], f"{key}.prompt_file", sink, check)
        if path is None or not path.is_file():
            return None if check else ""
        return path.read_text(encoding="utf-8")
    return None


def _owner(plan: CellPlan, deltas: dict, kind: str, rel: str) -> str:
    """The delta key that declares this brick, for the error message."""
    for dimension, joined in plan.delta.items():
        for value in joined.split("+"):
            if rel in deltas.get(dimension, {}).get(value, {}).get(kind, []):
                return f"deltas.{dimension}.{_quote(value)}"
    return f"cell `{plan.name}`"


def _build_cell(
    plan: CellPlan,
    deltas: dict,
    base_agent: AgentConfig,
    base_prompt: str,
    sc_dir: Path,
    sink: _Collector,
    check: bool,
) -> Cell:
    for conflict in plan.conflicts:
        sink.add(
            "variants." + plan.name if plan.is_variant else "deltas",
            f"cell `{plan.name}`: {conflict}",
            "let one delta of a cell set each scalar; split the cell or merge the deltas",
        )
    agent = replace(
        base_agent, **{k: plan.settings[k] for k in AGENT_SCALARS if k in plan.settings}
    )
    prompt = base_prompt
    if any(k in plan.settings for k in ("prompt", "prompt_file")):
        prompt = _task_prompt(plan.settings, sc_dir, f"cell `{plan.name}` task", sink, check) or ""
    bricks = []
    for kind in BRICK_KINDS:
        for rel in plan.settings.get(kind, []):
            path = _resolve_relative(
                sc_dir, rel, f"{_owner(plan, deltas, kind, rel)}.{kind}", sink, check
            )
            if path is None:
                continue
            sha = content_sha256(path) if check else ""
            bricks.append(Brick(kind=kind, rel=rel, path=path, sha256=sha))
    return Cell(
        name=plan.name,
        slug=slugify(plan.name),
        is_baseline=plan.is_baseline,
        is_variant=plan.is_variant,
        delta=dict(plan.delta),
        settings=plan.settings,
        agent=agent,
        prompt=prompt,
        bricks=bricks,
    )


def _check_cell_names(cells: list[Cell], sink: _Collector) -> None:
    seen_names: dict[str, str] = {}
    seen_slugs: dict[str, str] = {}
    for cell in cells:
        if not cell.slug:
            sink.add(
                f"variants.{cell.name}",
                f"cell name `{cell.name}` has no letter or digit, so it has no results folder",
                "rename it",
            )
        if cell.name in seen_names:
            sink.add(
                f"variants.{cell.name}", f"two cells are named `{cell.name}`", "rename the variant"
            )
        elif cell.slug in seen_slugs:
            sink.add(
                f"variants.{cell.name}",
                f"cells `{seen_slugs[cell.slug]}` and `{cell.name}` share the results folder runs/{cell.slug}/",
                "rename one of them so that their slugs differ",
            )
        seen_names[cell.name] = cell.name
        seen_slugs.setdefault(cell.slug, cell.name)


def _check_offline_policies(data: dict, cells: list[Cell], sink: _Collector) -> None:
    """The offline model's policy is its model name: a misspelt one would fail every run."""
    from agentab.offline_model.policy import shipped_policy_names

    known = shipped_policy_names()
    wanted = {("agent.model", c.agent.model) for c in cells if c.agent.provider == "offline"}
    for name, spec in data.get("validators", {}).items():
        if spec.get("mode") == "judge" and str(spec.get("model", "")).startswith("offline:"):
            wanted.add((f"validators.{name}.model", spec["model"].removeprefix("offline:")))
    for key, policy in sorted(wanted):
        if policy not in known and not policy.endswith(".toml"):
            sink.add(
                key,
                f"the offline model has no policy named `{policy}`",
                f"use one of: {', '.join(known)}" + _suggest(policy, known),
            )


def _pick_reference(data: dict, cells: list[Cell], sink: _Collector) -> str:
    baseline = next(
        (cell.name for cell in cells if cell.is_baseline), cells[0].name if cells else ""
    )
    wanted = data.get("protocol", {}).get("reference")
    if wanted is None:
        return baseline
    for cell in cells:
        if wanted in (cell.name, cell.slug):
            return cell.name
    sink.add(
        "protocol.reference",
        f"reference `{wanted}` is not a cell of this scenario",
        f"use one of: {', '.join(cell.name for cell in cells)}"
        + _suggest(wanted, [c.name for c in cells]),
    )
    return baseline


def _judge_metrics(spec: dict, sc_dir: Path, key: str, sink: _Collector, check: bool) -> set[str]:
    if not check:
        return set()
    path = _resolve_relative(sc_dir, spec["schema_file"], f"{key}.schema_file", sink, True)
    if path is None:
        return set()
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
    except (ValueError, jsonschema.SchemaError) as error:
        sink.add(
            f"{key}.schema_file",
            f"`{spec['schema_file']}` is not a valid JSON Schema: {str(error).splitlines()[0]}",
            "fix the schema file",
        )
        return set()
    from agentab.validators import REASON_FIELDS

    return set(schema.get("properties", {})) - set(REASON_FIELDS)


def _check_validators(data: dict, sc_dir: Path, sink: _Collector, check: bool) -> None:
    metrics = set(data.get("validation", {}).get("metrics", []))
    produced: dict[str, str] = {}
    forms = []
    for name, spec in data.get("validators", {}).items():
        key = f"validators.{name}"
        mode = spec.get("mode")
        if mode == "script" and check:
            first = spec["run"][0]
            if "/" in first or first.endswith((".py", ".sh")):
                _resolve_relative(sc_dir, first, f"{key}.run", sink, True)
        elif mode == "judge":
            if check:
                _resolve_relative(sc_dir, spec["rubric_file"], f"{key}.rubric_file", sink, True)
            for metric in _judge_metrics(spec, sc_dir, key, sink, check):
                produced.setdefault(metric, name)
        elif mode == "form":
            forms.append((name, spec))
    for name, spec in forms:
        for metric in spec.get("fills", []):
            if metric in produced:
                sink.add(
                    f"validators.{name}.fills",
                    f"form `{name}` fills `{metric}`, which validator `{produced[metric]}` produces",
                    "a form may fill only a metric nothing else produces; remove it from fills",
                )
            if metric not in metrics:
                sink.add(
                    f"validators.{name}.fills",
                    f"form `{name}` fills `{metric}`, which is not in the metric contract",
                    f"add `{metric}` to [validation].metrics, or remove it from fills",
                )
    if not data.get("validators"):
        sink.add(
            "validators",
            "the scenario declares no validator, so no run could be scored",
            "add a [validators.<name>] table (mode script, judge or form)",
        )


# ---------------------------------------------------------------------------- loading


def load_scenario(
    path: Path | str, *, check_etalon: bool = True, check_bricks: bool = True
) -> Scenario:
    """Load and check a scenario; raise ScenarioError listing every problem found.

    A frozen copy (results/<name>/scenario.toml) loads with both checks off: it then needs
    neither its folder nor its repository, which is what rebuilding a synthesis relies on.
    """
    path = Path(path).absolute()
    data, text = _read_toml(path)
    sink = _Collector(path, text)
    _schema_problems(data, sink)
    if sink.problems:
        raise ScenarioError(sink.problems)
    sc_dir = path.parent
    _check_matrix(data, sink)
    _check_validators(data, sc_dir, sink, check_bricks)

    task_prompt = _task_prompt(data["task"], sc_dir, "task", sink, check_bricks)
    if task_prompt is None and not ({"prompt", "prompt_file"} & set(data["task"])):
        sink.add(
            "task",
            "the task has no prompt",
            'add prompt = "..." or prompt_file = "task.md" to [task]',
        )
    raw_agent = data["agent"]
    base_agent = AgentConfig(
        harness=raw_agent["harness"],
        version=raw_agent["version"],
        provider=raw_agent["provider"],
        model=raw_agent["model"],
        thinking=raw_agent["thinking"],
        timeout_s=parse_duration(raw_agent["timeout"]),
    )
    plans = cells_module.expand(
        data.get("axes", {}), data.get("deltas", {}), _variants_as_lists(data.get("variants", {}))
    )
    cells = [
        _build_cell(
            plan, data.get("deltas", {}), base_agent, task_prompt or "", sc_dir, sink, check_bricks
        )
        for plan in plans
    ]
    _check_cell_names(cells, sink)
    if check_bricks:
        _check_offline_policies(data, cells, sink)
    reference = _pick_reference(data, cells, sink)
    etalon = _etalon(data["etalon"], sc_dir)
    if check_etalon and not sink.problems:
        from agentab.etalon import etalon_problem  # late: keeps `synthesize` free of git

        message = etalon_problem(etalon.location, etalon.tag)
        if message:
            sink.add(
                "etalon.tag" if "tag" in message.key else "etalon.repo", message.text, message.fix
            )
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
    )


def _etalon(raw: dict, sc_dir: Path) -> Etalon:
    repo = raw["repo"]
    is_url = re.match(r"^[a-z][a-z0-9+.-]*://", repo) or re.match(r"^[^/]+@[^/]+:", repo)
    location = repo if is_url else str((sc_dir / repo).resolve())
    return Etalon(repo=repo, tag=raw["tag"], location=location)
