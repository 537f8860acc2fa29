"""The loader, fuzzed: whatever a scenario folder holds, `load_scenario` returns a Scenario or
raises an AgentabError that says what to fix. Any other exception would reach a person as a
traceback, or end a whole workflow, other scenarios included.

Documents are the demo scenario with random damage: values of the wrong type, odd strings,
huge and non-finite numbers, strange names for cells and validators, unknown keys, deleted
keys; then, on the bytes, a byte-order mark, bytes that are not UTF-8, deep nesting. The files
it names (the task, a brick, the judge's rubric and schema) are damaged the same way.
Derandomized, so CI runs the same examples every time.
"""

from __future__ import annotations

import json
import math
import shutil
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentab.errors import AgentabError
from agentab.scenario import Scenario, load_scenario

DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo"
BASE = tomllib.loads((DEMO / "scenario.toml").read_text())
FILES = ("task.md", "bricks/run-tests.md", "rubrics/on_task.md", "rubrics/on_task.schema.json")

FUZZ = settings(
    max_examples=120,
    deadline=None,  # the first example pays for importing jsonschema
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---------------------------------------------------------------------------- writing TOML


def toml_string(text: str) -> str:
    escapes = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    out = []
    for char in text:
        if char in escapes:
            out.append(escapes[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            "nan"
            if math.isnan(value)
            else ("inf" if value > 0 else "-inf")
            if math.isinf(value)
            else repr(value)
        )
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return "{" + ", ".join(f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_document(data: dict) -> str:
    """Top-level scalars first, then a table per top-level table (its tables inline)."""
    lines = [
        f"{toml_string(k)} = {toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)
    ]
    for key, table in data.items():
        if isinstance(table, dict):
            lines.append(f"[{toml_string(key)}]")
            lines += [f"{toml_string(k)} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- damage

ODD_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "",
            " ",
            "../x",
            "a/b",
            ".",
            "..",
            "/etc/passwd",
            "nan",
            "inf",
            "-1",
            "0s",
            "1e9h",
            "claude-sonnet-4-5",
            "offline:nope",
            "x" * 300,
            "\u00e9\u00e8",
            "\ufeffname",
            "a\nb",
            "rubrics/on_task.md",
            "bricks",
            "validators/tests.py",
            "policy.toml",
            "CON",
        ]
    ),
)
SCALARS = st.one_of(
    ODD_TEXT,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(ODD_TEXT, inner, max_size=3)
    ),
    max_leaves=8,
)


def paths_of(data: dict, prefix=()) -> list[tuple]:
    found = []
    for key, value in data.items():
        found.append((*prefix, key))
        if isinstance(value, dict):
            found += paths_of(value, (*prefix, key))
    return found


def parent_of(data: dict, path: tuple) -> dict:
    for key in path[:-1]:
        data = data[key]
    return data


@st.composite
def damaged_documents(draw) -> dict:
    data = json.loads(json.dumps(BASE))  # a deep copy
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        paths = paths_of(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = parent_of(data, path)
        action = draw(st.sampled_from(["replace", "rename", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(VALUES)
        elif action == "rename":
            parent[draw(ODD_TEXT)] = parent.pop(path[-1])
        elif action == "delete":
            del parent[path[-1]]
        else:
            parent[draw(ODD_TEXT)] = draw(VALUES)
    return data


@st.composite
def damaged_bytes(draw, text: str) -> bytes:
    data = text.encode("utf-8")
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if draw(st.integers(0, 7)) == 0:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
    if draw(st.integers(0, 6)) == 0:
        depth = draw(st.sampled_from([10, 400, 3000]))
        data += b"\n[deep]\nx = " + b"[" * depth + b"]" * depth + b"\n"
    return data


@st.composite
def damaged_files(draw) -> dict[str, bytes]:
    files = {}
    for rel in FILES:
        original = (DEMO / rel).read_bytes()
        files[rel] = draw(
            st.one_of(
                st.just(original),
                st.just(b"\xef\xbb\xbf" + original),
                st.binary(max_size=20),
                st.sampled_from([b"", b" \n", b"[]", b"{}", b'{"type": "object"}', b"[" * 3000]),
            )
        )
    return files


# ---------------------------------------------------------------------------- the property


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz") / "demo"
    shutil.copytree(DEMO, folder, symlinks=True)
    return folder


def loads_or_says_why(path: Path, **checks) -> None:
    try:
        scenario = load_scenario(path, check_etalon=False, **checks)
    except AgentabError as error:
        assert error.problems and all(problem.message for problem in error.problems)
        return
    assert isinstance(scenario, Scenario)
    if checks.get("check_bricks", True):
        measures_something(scenario)


def measures_something(scenario: Scenario) -> None:
    """What a scenario that loads promises its runs: a task, folders it can write, sane limits."""
    for cell in scenario.cells:
        assert cell.prompt.strip() and not cell.prompt.startswith("\ufeff")
        assert 0 < len(cell.slug) <= 100
        assert 1 <= cell.agent.timeout_s <= 24 * 3600
    for name in scenario.validators:
        assert "/" not in name and not name.startswith(".") and len(name) <= 64


def write_folder(folder: Path, document: bytes, files: dict[str, bytes]) -> Path:
    for rel in FILES:
        (folder / rel).write_bytes((DEMO / rel).read_bytes())
    for rel, data in files.items():
        (folder / rel).write_bytes(data)
    (folder / "scenario.toml").write_bytes(document)
    return folder / "scenario.toml"


@FUZZ
@given(data=st.data())
def test_a_damaged_scenario_loads_or_is_refused(folder: Path, data) -> None:
    document = data.draw(damaged_bytes(toml_document(data.draw(damaged_documents()))))
    path = write_folder(folder, document, {})
    loads_or_says_why(path)
    loads_or_says_why(path, check_schema=False)
    loads_or_says_why(path, check_bricks=False)


@FUZZ
@given(files=damaged_files(), data=st.data())
def test_damaged_files_beside_a_damaged_scenario_load_or_are_refused(
    folder: Path, files, data
) -> None:
    document = data.draw(damaged_bytes((DEMO / "scenario.toml").read_text()))
    path = write_folder(folder, document, files)
    loads_or_says_why(path)
    loads_or_says_why(path, check_schema=False)


BOM = b"\xef\xbb\xbf"
# Damage the loader must refuse whichever file it hits: nothing in it, or bytes that are not
# UTF-8 text; and, in the judge's schema, anything that is not the schema of a verdict.
REFUSED_TEXT = [b"", b" \n", b"\xff\xfe not utf-8"]
REFUSED_SCHEMA = [b"[]", b"{}", b'{"type": "object"}', b"[" * 3000, b"not json"]


@st.composite
def files_with_known_damage(draw) -> tuple[dict[str, bytes], set[str]]:
    """Each file beside the scenario left whole, given a byte-order mark (harmless), or damaged
    so that the loader must refuse it; and the names of those damaged so."""
    files, refused = {}, set()
    for rel in FILES:
        original = (DEMO / rel).read_bytes()
        kind = draw(st.sampled_from(["whole", "bom", "refused"]))
        if kind == "refused":
            schema = REFUSED_SCHEMA if rel.endswith(".json") else []
            files[rel] = draw(st.sampled_from(REFUSED_TEXT + schema))
            refused.add(rel)
        else:
            files[rel] = original if kind == "whole" else BOM + original
    return files, refused


@FUZZ
@given(damage=files_with_known_damage(), bom=st.booleans())
def test_damaged_files_beside_the_scenario_are_refused_and_a_byte_order_mark_is_not(
    folder: Path, damage, bom
) -> None:
    files, refused = damage
    document = (BOM if bom else b"") + (DEMO / "scenario.toml").read_bytes()
    path = write_folder(folder, document, files)
    for checks in ({}, {"check_schema": False}):
        if not refused:
            measures_something(load_scenario(path, check_etalon=False, **checks))
            continue
        with pytest.raises(AgentabError) as error:
            load_scenario(path, check_etalon=False, **checks)
        problems = error.value.problems
        named = {rel for rel in FILES for p in problems if f"`{rel}`" in p.file + p.message}
        assert named == refused, [p.render() for p in problems]  # every one, and only those
