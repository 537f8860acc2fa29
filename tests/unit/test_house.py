"""Packages and layers: a package per concept, small modules, and imports that only go down.

docs/internals.md draws the same layers; this test keeps the drawing true.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "agentab"

# Lowest first. A module may import from its own package (a "room": a package of agentab or a
# module at its top), or from a package of a lower layer.
LAYERS = [
    {"errors", "files", "layout", "metrics", "prices", "rendering", "workers"},
    {"confinement", "etalon", "harnesses", "local_model", "offline_model", "runfiles", "stats"},
    {"budget", "trajectory"},
    {"scenario"},
    {"run"},
    {"validators"},
    {"mining", "synthesis"},
    {"planning"},
    {"workflow"},
    {"report"},
    {"commands"},
    {"cli"},
    {"steps"},
    {"__init__"},  # `import agentab`: the public API, over every package
]
MAX_LINES = 500
MAX_TOP_MODULES = 9


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def room(path: Path) -> str:
    first = path.relative_to(PACKAGE).parts[0]
    return first.removesuffix(".py")


def layer(name: str) -> int:
    for index, rooms in enumerate(LAYERS):
        if name in rooms:
            return index
    raise AssertionError(f"{name} is in no layer of tests/unit/test_house.py: add it")


def imported_rooms(path: Path) -> set[str]:
    """The packages of agentab a module imports, at any depth of its code (late imports too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "agentab":
                if len(parts) > 1:
                    found.add(parts[1])
                else:
                    found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "agentab" and len(parts) > 1:
                    found.add(parts[1])
    return found


def test_every_module_is_at_most_500_lines():
    assert len(modules()) > 30  # the package was found
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


def test_few_modules_stay_at_the_top_of_the_package():
    top = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= MAX_TOP_MODULES, sorted(top)


def test_imports_only_go_to_the_same_room_or_a_lower_layer():
    upward = []
    assert len(modules()) > 30
    for path in modules():
        here = room(path)
        for there in imported_rooms(path) - {here}:
            if layer(there) >= layer(here):
                upward.append(f"{path.relative_to(PACKAGE)} imports agentab.{there}")
    assert not upward, "\n".join(upward)


def test_the_layer_check_sees_an_upward_import(tmp_path):
    # The check above must be able to fail: a scenario module that imports the synthesis would.
    module = tmp_path / "probe.py"
    module.write_text("def late():\n    from agentab.synthesis import stats\n")
    assert "synthesis" in imported_rooms(module)
    assert layer("synthesis") > layer("scenario")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each module of agentab -> the modules of agentab it imports (late imports too)."""
    known = {module_name(path): path for path in modules()}
    graph = {}
    for name, path in known.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    child = f"{node.module}.{alias.name}"
                    found.add(child if child in known else node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {other for other in found if other in known and other != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or around a circle."""
    reach = {name: set() for name in graph}
    for start in graph:
        todo = list(graph[start])
        while todo:
            here = todo.pop()
            if here not in reach[start]:
                reach[start].add(here)
                todo.extend(graph[here])
    groups = {
        frozenset({a, *(b for b in reach[a] if a in reach[b])}) for a in graph if a in reach[a]
    }
    return sorted(sorted(group) for group in groups)


def test_no_module_imports_itself_around_a_circle():
    graph = import_graph()
    assert len(graph) > 30
    assert circles(graph) == []


def test_the_circle_check_sees_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


MAX_PACKAGE_MODULES = 15


def test_no_package_holds_more_than_15_modules():
    crowded = {}
    for folder in {path.parent for path in modules()}:
        count = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        if folder != PACKAGE and count > MAX_PACKAGE_MODULES:
            crowded[str(folder.relative_to(PACKAGE))] = count
    assert not crowded, crowded


def test_every_package_says_what_it_is_for():
    silent = [
        str(init.relative_to(PACKAGE))
        for init in PACKAGE.rglob("__init__.py")
        if "__pycache__" not in init.parts
        and ast.get_docstring(ast.parse(init.read_text())) is None
    ]
    assert not silent, silent


def test_each_statistics_module_imports_first_on_its_own():
    """The pure package can be read and used a module at a time: each of its modules is the
    first thing a fresh interpreter imports (an import circle would fail so)."""
    import subprocess
    import sys

    names = sorted(p.stem for p in (PACKAGE / "stats").glob("*.py") if p.stem != "__init__")
    for name in names:
        done = subprocess.run(
            [sys.executable, "-c", f"import agentab.stats.{name}"], capture_output=True, text=True
        )
        assert done.returncode == 0, f"agentab.stats.{name}: {done.stderr[-300:]}"
