"""What a `mode = "tests"` validator knows before the test process starts, and that process does
not: the tests its target files hold (read as text, never imported: the run's code is not run
to count them), and two sentinels per file, under names drawn for this job alone.

A sentinel that must pass and one that must fail are appended to every target file. A report
that says the failing one passed, or that the passing one did not, was not written by the test
runner: the run's code wrote or rewrote it (`report forged`). A forgery that claims every test
passed is so caught with certainty; one that imitates each sentinel's outcome must first find
them among the tests of the file, by their text (docs/validators.md says what this guarantees).
"""

from __future__ import annotations

import ast
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from agentab.files import open_inside

PYTEST, UNITTEST = "pytest", "unittest"
RUNNERS = (PYTEST, UNITTEST)
# The files a runner takes as tests when it is handed a folder (pytest's and unittest's defaults).
TEST_FILE_PATTERNS = {PYTEST: ("test_*.py", "*_test.py"), UNITTEST: ("test*.py",)}
# Larger test files are not parsed: a tagged test file is text a person wrote.
MAX_TEST_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Sentinels:
    """The two tests appended to a target file: their ids as the runner reports them."""

    must_pass: str
    must_fail: str


@dataclass
class Expected:
    """The tests the target files hold, by id without parameters, per file; their sentinels."""

    tests: dict[str, list[str]] = field(default_factory=dict)  # file -> ids
    sentinels: dict[str, Sentinels] = field(default_factory=dict)  # file -> its two
    unreadable: dict[str, str] = field(default_factory=dict)  # file -> why

    def all_tests(self) -> list[str]:
        return [test for ids in self.tests.values() for test in ids]


def matches_runner(path: str, runner: str) -> bool:
    name = PurePosixPath(path).name
    return any(PurePosixPath(name).match(pattern) for pattern in TEST_FILE_PATTERNS[runner])


def target_files(targets: list[str], tagged: set[str], runner: str) -> list[str]:
    """The test files the targets name, among the files the tag has (a file the run added is
    never a target, whatever its name): a file as named, a folder as its runner's test files."""
    found: list[str] = []
    for target in targets:
        target = target.strip("/")
        if target in tagged:
            found.append(target)
            continue
        inside = sorted(p for p in tagged if p.startswith(f"{target}/") and p.endswith(".py"))
        found += [p for p in inside if matches_runner(p, runner)]
    return list(dict.fromkeys(found))


def test_id(path: str, runner: str, *names: str) -> str:
    if runner == PYTEST:
        return "::".join([path, *names])
    module = path.removesuffix(".py").replace("/", ".")
    return ".".join([module, *names])


def base_id(reported: str) -> str:
    """A reported id without its parameters: `t.py::test_x[1-2]` is a case of `t.py::test_x`."""
    return reported.split("[", 1)[0] if reported.endswith("]") else reported


def is_test_case(node: ast.ClassDef, cases: set[str]) -> bool:
    for base in node.bases:
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        if name.endswith("TestCase") or name in cases:
            return True
    return False


def test_methods(node: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> list[str]:
    """A class's test methods, its bases of the same module included (a subclass runs them)."""
    names: list[str] = []
    for base in node.bases:
        if isinstance(base, ast.Name) and base.id in classes and base.id != node.name:
            names += test_methods(classes[base.id], classes)
    own = [
        item.name
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name.startswith("test")
    ]
    return list(dict.fromkeys(names + own))


def collected_tests(source: str, path: str, runner: str) -> list[str]:
    """The tests of a file as its runner collects them by default: unittest the test methods of
    TestCase classes; pytest those, `test*` functions and `Test*` classes without `__init__`."""
    tree = ast.parse(source, filename=path)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    cases: set[str] = set()
    for node in classes.values():  # in order: a case's subclass is a case
        if is_test_case(node, cases):
            cases.add(node.name)
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            plain = node.name.startswith("Test") and not any(
                isinstance(item, ast.FunctionDef) and item.name == "__init__" for item in node.body
            )
            if node.name in cases or (runner == PYTEST and plain):
                found += [test_id(path, runner, node.name, m) for m in test_methods(node, classes)]
        elif (
            runner == PYTEST
            and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test")
        ):
            found.append(test_id(path, runner, node.name))
    return found


def read_tagged_file(root, path: str) -> str:
    with open_inside(root, path, os.O_RDONLY) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TEST_FILE_BYTES:
            raise ValueError(f"not a test file of at most {MAX_TEST_FILE_BYTES} bytes")
        return handle.read().decode("utf-8")


def sentinel_code(cls: str, passing: str, failing: str) -> str:
    """Two tests in a TestCase of their own (both runners collect one, whatever its name)."""
    token = secrets.token_hex(8)
    return (
        f"\n\nimport unittest as _unittest_{cls}\n\n\n"
        f"class {cls}(_unittest_{cls}.TestCase):\n"
        f"    def {passing}(self):\n"
        f"        self.assertEqual({token!r}, {token!r})\n\n"
        f"    def {failing}(self):\n"
        f"        self.assertEqual({token!r}, {token[::-1]!r})\n"
    )


def add_sentinels(root, path: str, runner: str) -> Sentinels:
    cls = f"Test{secrets.token_hex(5).capitalize()}"
    passing, failing = (f"test_{secrets.token_hex(5)}" for _ in range(2))
    with open_inside(root, path, os.O_WRONLY | os.O_APPEND) as handle:
        handle.write(sentinel_code(cls, passing, failing).encode())
    return Sentinels(test_id(path, runner, cls, passing), test_id(path, runner, cls, failing))


def expect_and_guard(root, files: list[str], runner: str) -> Expected:
    """Read each target file's tests, then append its sentinels (in that order: the sentinels
    are never expected as tests of the etalon)."""
    expected = Expected()
    for path in files:
        try:
            expected.tests[path] = collected_tests(read_tagged_file(root, path), path, runner)
        except (OSError, ValueError, SyntaxError) as error:
            expected.unreadable[path] = f"{type(error).__name__}: {error}"
            continue
        expected.sentinels[path] = add_sentinels(root, path, runner)
    return expected
