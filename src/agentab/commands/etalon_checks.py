"""What `agentab check` says of a scenario against its etalon's tree: test dependencies without a
setup, tests left out of `protect`, and a trial of the setup itself. (An offline policy whose
steps would fail on the tree is refused: `run/policy_check.py`.)"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

from agentab import etalon
from agentab.errors import AgentabError

# Files that say a repository needs an environment of its own to run its tests.
DEPENDENCY_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "requirements-dev.txt",
    "tox.ini",
    "package.json",
)


def etalon_warnings(scenario, mirrors_dir: Path) -> list[str]:
    tree, _ = etalon.pristine_checkout(
        scenario.etalon.location, scenario.etalon.tag, mirrors_dir.absolute()
    )
    return environment_warnings(scenario, tree) + protection_warnings(scenario, tree)


# What tests look like across ecosystems: a folder of them, or a file named as one.
TEST_FOLDERS = ("tests", "test", "__tests__", "spec", "testing")
TEST_FILES = ("test_*.py", "*_test.py", "conftest.py", "*_test.go", "*.test.[jt]s", "*.spec.[jt]s",
              "*.test.[jt]sx", "*_spec.rb", "*Test.java")  # fmt: skip
SHOWN_PATHS = 3


def test_paths(tree: Path) -> list[str]:
    """The etalon's tests, as the repository lays them out (folders whole)."""
    found = []
    for path in sorted(tree.rglob("*")):
        relative = path.relative_to(tree)
        if relative.parts[0] == ".git" or any(p in found for p in map(str, relative.parents)):
            continue
        if (
            path.is_dir()
            and path.name in TEST_FOLDERS
            or path.is_file()
            and any(relative.match(pattern) for pattern in TEST_FILES)
        ):
            found.append(str(relative))
    return found


def protection_warnings(scenario, tree: Path) -> list[str]:
    """Tests the agent could edit to pass: none protected, or some left out of `protect`."""
    tests = test_paths(tree)
    if not tests:
        return []
    loose = [path for path in tests if not etalon.is_protected(path, scenario.protect)]
    if not loose:
        return []
    shown = ", ".join(loose[:SHOWN_PATHS]) + (" …" if len(loose) > SHOWN_PATHS else "")
    what = "protects none of them" if not scenario.protect else f"does not protect {shown}"
    return [
        f"etalon tag {scenario.etalon.tag} has tests ({shown}) and [validation] protect "
        f"{what}: an agent that edits or adds tests would pass them, and score as one that "
        'fixed the code; add them to protect (docs/validators.md, "Reward hacking")'
    ]


def environment_warnings(scenario, tree: Path) -> list[str]:
    """An etalon that declares dependencies, in a scenario that declares no setup: the agent's
    tests and the validators would run without them (or on a copy installed elsewhere)."""
    if scenario.etalon.setup:
        return []
    found = [name for name in DEPENDENCY_FILES if (tree / name).is_file()]
    found += sorted(p.name for p in tree.glob("requirements*/*.txt"))[:1]
    if not found:
        return []
    return [
        f"etalon tag {scenario.etalon.tag} declares dependencies ({', '.join(found)}) but the "
        "scenario declares no [etalon] setup: the agent and the validators get the system's "
        'tools only (docs/scenario.md, "Its environment")'
    ]


def try_setup(scenario, state: Path) -> str:
    """Run the setup once on a fresh clone, as a run would (confined, with the network, the
    caller's package-manager configuration and the shared cache), and say how long it took,
    what it made and the environment it made."""
    from agentab.run.setup import run_setup
    from agentab.run.workspace import claim

    if not scenario.etalon.setup:
        return "setup      none declared ([etalon] setup): nothing to try"
    folder = (state / "work").absolute() / secrets.token_hex(10)
    clone, cache = folder / "checkout", (state / "cache").absolute()
    claim(folder)  # killed, its folder is removed at the workflow's next start
    try:
        etalon.fresh_clone(
            scenario.etalon.location, scenario.etalon.tag, clone, (state / "mirrors").absolute()
        )
        log = folder / "setup.log"
        try:
            record = run_setup(scenario.etalon, clone, log, cache, folder / "lock", "bwrap")
        except AgentabError as error:
            raise AgentabError(
                f"{error.render()}\n{log.read_text(errors='replace')[-3000:]}"
            ) from None
        made = etalon.TreeGit(clone).differences()
        given = ", ".join(record.package_config["files"]) or "none"
        lines = [
            f"setup      ran in {record.seconds:.1f}s; it made {', '.join(made) or 'nothing'}",
            f"setup      read the package-manager configuration files: {given}",
        ]
        return "\n".join(lines + [f"environment {line}" for line in record.environment])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
