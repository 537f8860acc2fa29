"""The `[validators]` tables at load: what each mode needs on disk, and who fills which metric.

Apart from `rules` because a validator fails after the agent runs, which is the worst time to
learn that its script cannot be executed, that its judge is an alias the provider moves, or that
two validators fill one metric and one silently overwrites the other.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from agentab.metrics import REASON_FIELDS
from agentab.scenario.calibrating import check_calibrating_form, is_calibrating
from agentab.scenario.names import check_validator_names
from agentab.scenario.rules import resolve_file, resolve_relative
from agentab.scenario.source import Collector
from agentab.scenario.texts import is_blank, read_text

OFFLINE_JUDGE = "offline:"
# A model id that names one snapshot ends in its date (`claude-sonnet-4-5-20250929`, or
# `@20250929` on some platforms); without it the id is an alias the provider may move.
PINNED_MODEL = re.compile(r".+[-@][0-9]{8}")
VERDICT_SHAPE = '{"type": "object", "properties": {"<metric>": {...}}}'


def check_validators(data: dict, sc_dir: Path, sink: Collector, check: bool) -> None:
    check_validator_names(data, sink)
    producers: dict[str, str] = {}
    for name, spec in data.get("validators", {}).items():
        key = f"validators.{name}"
        mode = spec.get("mode")
        if mode == "script" and check:
            check_script(spec, sc_dir, key, sink)
        elif mode == "judge":
            if check:
                check_judge_model(spec["model"], key, sink)
                check_rubric(spec, sc_dir, key, sink)
            for metric in sorted(judge_metrics(spec, sc_dir, key, sink, check)):
                claim_metric(metric, name, f"{key}.schema_file", producers, sink)
    judges = dict(producers)  # before the tests validators and the forms claim theirs
    for name, spec in data.get("validators", {}).items():
        if spec.get("mode") == "tests":
            key = f"validators.{name}"
            check_tests(spec, data, sc_dir, key, sink, check)
            for metric in tests_metrics(spec, data):
                claim_metric(metric, name, key, producers, sink)
    for name, spec in data.get("validators", {}).items():
        if spec.get("mode") == "form":
            check_form_fills(name, spec, data, producers, sink)
            check_calibrating_form(name, spec, data, judges, sc_dir, sink)
    if not data.get("validators"):
        sink.add(
            "validators",
            "the scenario declares no validator, so no run could be scored",
            "add a [validators.<name>] table (mode script, tests, judge or form)",
        )


def claim_metric(metric: str, name: str, key: str, producers: dict, sink: Collector) -> None:
    """One metric, one validator: otherwise one value silently overwrites the other."""
    if metric in producers:
        sink.add(
            key,
            f"validators `{producers[metric]}` and `{name}` both fill the metric `{metric}`: "
            "one value would overwrite the other",
            f"let one of them fill `{metric}`, or rename it in the other",
        )
        return
    producers[metric] = name


def tasks_with_ids(data: dict) -> list[str]:
    return [
        name
        for name, task in (data.get("tasks") or {}).items()
        if task.get("fail_to_pass") or task.get("pass_to_pass")
    ]


def tests_metrics(spec: dict, data: dict) -> list[str]:
    """What a tests validator returns: its metric, and with tasks that name their tests, whether
    those that must go from failing to passing did and those that must keep passing did."""
    named = ["fail_to_pass", "pass_to_pass"] if tasks_with_ids(data) else []
    return [spec.get("metric", "tests_pass"), *named]


def check_tests(spec: dict, data: dict, sc_dir: Path, key: str, sink: Collector, check: bool):
    """A tests validator has tests to run for every task, and its hidden folder exists."""
    hidden = spec.get("hidden")
    if check and hidden and not (sc_dir / hidden).is_dir():
        sink.add(
            f"{key}.hidden",
            f"`{hidden}` is not a folder beside the scenario",
            "point hidden at the folder of tests the agent never sees, laid out as the "
            "repository's paths (hidden/tests/test_x.py is laid at tests/test_x.py)",
        )
    if spec.get("tests"):
        return
    tasks = data.get("tasks") or {}
    without = [name for name in tasks if name not in tasks_with_ids(data)] if tasks else [""]
    if without:
        which = f"task `{without[0]}` names" if without[0] else "the scenario's task names"
        sink.add(
            f"{key}.tests",
            f"the tests validator has no tests to run: it has no `tests` and {which} none",
            'add tests = ["tests"] (files or folders of the etalon), or fail_to_pass and '
            "pass_to_pass to every [tasks.<name>]",
        )


def check_script(spec: dict, sc_dir: Path, key: str, sink: Collector) -> None:
    first = spec["run"][0]
    if "/" not in first and not first.endswith((".py", ".sh")):
        return  # a program on PATH, such as `pytest`
    path = resolve_relative(sc_dir, first, f"{key}.run", sink, True)
    if path is not None and path.is_file() and not path.stat().st_mode & 0o111:
        sink.add(
            f"{key}.run",
            f"`{first}` is not executable: a script validator is run as a program, so every "
            "run would fail to be scored",
            f"chmod +x {os.fspath(path)}",
        )


def check_judge_model(model: str, key: str, sink: Collector) -> None:
    if model.startswith(OFFLINE_JUDGE) or PINNED_MODEL.fullmatch(model):
        return
    sink.add(
        f"{key}.model",
        f"judge model `{model}` is an alias, not a pinned model id: the provider may move it to "
        "a newer model, and the judge's verdicts would stop comparing with earlier ones",
        f'give the dated id of one model, e.g. model = "{model}-YYYYMMDD" as the provider '
        'lists it (model = "claude-sonnet-4-5-20250929"), or model = "offline:<policy>"',
    )


def check_rubric(spec: dict, sc_dir: Path, key: str, sink: Collector) -> None:
    rel = spec["rubric_file"]
    path = resolve_file(sc_dir, rel, f"{key}.rubric_file", sink)
    if path is None:
        return
    text = read_text(path, rel, f"{key}.rubric_file", sink)
    if text is not None and is_blank(text):
        sink.add(
            f"{key}.rubric_file",
            f"`{rel}` is empty: the judge would score against no rubric",
            "write what the judge looks for, in plain words",
        )


def judge_metrics(spec: dict, sc_dir: Path, key: str, sink: Collector, check: bool) -> set[str]:
    """The metrics a judge fills: its verdict schema's properties, less the reason fields."""
    if not check:
        return set()
    rel = spec["schema_file"]
    path = resolve_file(sc_dir, rel, f"{key}.schema_file", sink)
    text = read_text(path, rel, f"{key}.schema_file", sink) if path else None
    if text is None:
        return set()
    import jsonschema  # here: only a full check reads the judge's schema

    try:
        schema = json.loads(text)
        jsonschema.Draft202012Validator.check_schema(schema)
    except (ValueError, RecursionError, jsonschema.SchemaError) as error:
        sink.add(
            f"{key}.schema_file",
            f"`{rel}` is not a valid JSON Schema: {str(error).splitlines()[0][:200]}",
            "fix the schema file",
        )
        return set()
    metrics = verdict_metrics(schema)
    if not metrics:
        sink.add(
            f"{key}.schema_file",
            f"`{rel}` is not the schema of a verdict: it must be an object whose properties "
            "are the metrics the judge fills",
            f"write it as {VERDICT_SHAPE}",
        )
    return metrics


def verdict_metrics(schema) -> set[str]:
    """The metric names of a verdict schema, empty when it does not describe an object."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return set()
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return set()
    return set(properties) - set(REASON_FIELDS)


def check_form_fills(name: str, spec: dict, data: dict, producers: dict, sink: Collector) -> None:
    metrics = set(data.get("validation", {}).get("metrics", []))
    key = f"validators.{name}.fills"
    for metric in spec.get("fills", []):
        if metric in producers:
            sink.add(
                key,
                f"form `{name}` fills `{metric}`, which validator `{producers[metric]}` produces",
                "a form may fill only a metric nothing else produces; remove it from fills",
            )
        else:
            producers[metric] = name
        if metric not in metrics and not is_calibrating(spec):  # its own rule: calibrating.py
            sink.add(
                key,
                f"form `{name}` fills `{metric}`, which is not in the metric contract",
                f"add `{metric}` to [validation].metrics, or remove it from fills",
            )
    for metric in spec.get("questions") or {}:
        if metric not in spec.get("fills", []):
            sink.add(
                f"validators.{name}.questions.{metric}",
                f"form `{name}` asks a question for `{metric}`, which it does not fill",
                f"name a metric of its fills ({', '.join(spec.get('fills', []))}), or add "
                f"`{metric}` to fills",
            )
