"""Reading a scenario file: TOML with the line of every key, and the schema's problems said so
that a person can fix them (unknown keys with a "did you mean", missing keys with their fix)."""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from functools import cache
from importlib import resources
from pathlib import Path

from agentab.confinement.limits import LIMITS_FIX, size_problem
from agentab.errors import Problem, ScenarioError, problem
from agentab.scenario.durations import DURATION_FIX, DURATION_KEYS, duration_problem

BYTE_ORDER_MARK = "\ufeff"


class Collector:
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


def key_at_line(text: str, line: int | None) -> str:
    """The key written at a line, or the last one above it: where a person looks."""
    found = ""
    for key, number in sorted(_key_lines(text).items(), key=lambda item: item[1]):
        if line is not None and number <= line:
            found = ".".join(key)
    return found


def _deepest_line(text: str) -> int | None:
    """The line where brackets open deepest: what a too deep nesting error points at."""
    depth, deepest, where = 0, 0, None
    for number, line in enumerate(text.splitlines(), start=1):
        for char in line:
            depth += (char in "[{") - (char in "]}")
            if depth > deepest:
                deepest, where = depth, number
    return where


def read_toml(path: Path) -> tuple[dict, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(
            problem(
                path, "", "no such scenario file", "check the path (scenarios/<name>/scenario.toml)"
            )
        ) from None
    except UnicodeDecodeError as error:
        line = path.read_bytes()[: error.start].count(b"\n") + 1
        raise ScenarioError(
            problem(
                path,
                key_at_line(error.object.decode("utf-8", "replace"), line),
                f"is not UTF-8 text (byte {error.object[error.start]:#04x} cannot be decoded)",
                "save the file as UTF-8 (TOML files are UTF-8 by definition)",
                line,
            )
        ) from None
    except IsADirectoryError:
        inside = Path(path) / "scenario.toml"
        raise ScenarioError(
            problem(
                path,
                "",
                "is a folder; a scenario is one TOML file",
                f"name the file: {inside}"
                if inside.is_file()
                else "name the scenario's .toml file (e.g. scenarios/demo/scenario.toml)",
            )
        ) from None
    except OSError as error:
        raise ScenarioError(
            problem(path, "", f"cannot read the file: {error.strerror}", "check its permissions")
        ) from None
    # A byte-order mark is how some editors say "UTF-8"; TOML does not allow it, so it goes.
    text = text.removeprefix(BYTE_ORDER_MARK)
    try:
        return tomllib.loads(text), text
    except RecursionError:
        line = _deepest_line(text)
        raise ScenarioError(
            problem(
                path,
                key_at_line(text, line),
                "nests arrays or tables too deeply to be read",
                "flatten the nesting: no key of a scenario holds more than a list of strings",
                line,
            )
        ) from None
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
    schema_file = resources.files("agentab.scenario") / "schema" / "scenario.schema.json"
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
    "memory": 'memory = "4G" in [protocol.limits]',
    "processes": "processes = 512 in [protocol.limits]",
    "disk": 'disk = "4G" in [protocol.limits]',
    "patch": 'patch = "5M" in [protocol.limits]',
}


def schema_problems(data: dict, sink: Collector) -> None:
    # Imported here: a workflow step loads an already checked scenario without it, and the
    # import alone costs more than the rest of the step's start.
    import jsonschema

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
        elif len(path) == 3 and path[:2] == ["protocol", "limits"]:
            message = size_problem(error.instance) if path[2] != "processes" else None
            sink.add(key, f"`{key}`: {message or error.message}", LIMITS_FIX)
        elif path and path[-1] in DURATION_KEYS:
            message = duration_problem(error.instance) or f"{error.instance!r} is not a duration"
            sink.add(key, f"`{key}`: {message}", DURATION_FIX)
        elif error.validator in ("allOf", "oneOf", "anyOf") and error.context:
            best = jsonschema.exceptions.best_match(error.context)
            sink.add(key, f"`{key}`: {best.message}", _type_fix(path))
        else:
            sink.add(key or "(top)", f"`{key}`: {error.message}", _type_fix(path))


def _type_fix(path: list) -> str:
    last = str(path[-1]) if path else ""
    hints = {
        "repetitions": "repetitions is an integer ≥ 1, e.g. repetitions = 10",
        "sample": "sample is an integer ≥ 1: how many runs a person labels, e.g. sample = 40",
        "thinking": "one of off, minimal, low, medium, high, xhigh, max",
        "mode": 'mode is "script", "tests", "judge" or "form"',
        "name": "letters, digits, '.', '_' and '-' only (it names results/<name>/)",
        "stopping": 'stopping = "fixed" (the default) or stopping = "sequential"',
        "wave": "wave is an integer ≥ 1, the runs per cell in each wave, e.g. wave = 5",
    }
    return hints.get(last, "see docs/scenario.md for the format of this key")


# ---------------------------------------------------------------------------- rules


def quote_key(value: str) -> str:
    """A TOML key as a person writes it: bare when it can be, quoted otherwise."""
    return value if re.fullmatch(r"[A-Za-z0-9_-]+", value) else json.dumps(value)


def suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""
