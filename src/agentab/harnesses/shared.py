"""What every adapter would otherwise write again: the constructed environment of a run, a
brick's files copied as text, and a TOML value of a command line.

Each is written once here, so that an adapter is only what differs between agent CLIs.
"""

from __future__ import annotations

from pathlib import Path

import tomlkit

from agentab.errors import AgentabError, problem


def constructed_env(path: str, home: Path, tmp: Path, **variables: str) -> dict[str, str]:
    """A run's whole environment, nothing inherited: PATH, HOME and TMPDIR in the run's own
    scratch dir, a UTF-8 locale, and the adapter's own `variables` (its config dir, its
    switches). Which programs an agent finds, and what it reads at HOME, must not depend on the
    machine agentab runs on."""
    return {
        "PATH": path,
        "HOME": str(home),
        "TMPDIR": str(tmp),
        **variables,
        "LC_ALL": "C.UTF-8",
        # Tests the agent runs must not leave bytecode that result.patch would count as work.
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def brick_text(brick, path: Path | None = None) -> str:
    """The text of a brick's file (`path`, else the brick's own), as UTF-8. A harness is handed
    a brick as text written into its config dir: a file that is not text (binary, or another
    encoding) is refused, naming it, rather than passed mangled or crashing the run."""
    path = Path(brick.path if path is None else path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        text = "\0"
    if "\0" in text:
        raise AgentabError(
            problem(
                path,
                brick.kind,
                "not UTF-8 text: a brick is handed to the harness as text (its instructions, "
                "a skill's or an extension's files)",
                "save it as UTF-8, or leave binary files out of the brick's folder",
            )
        )
    return text


def refused_brick(harness: str, brick, takes: str, reason: str = "") -> AgentabError:
    """The error for a brick of a kind `harness` (as a person names it) cannot take by
    explicit path: agentab never lets discovery bring it in instead."""
    why = f": {reason}" if reason else ""
    return AgentabError(
        problem(
            "scenario",
            brick.kind,
            f"{harness} cannot take a brick of kind {brick.kind!r} ({brick.rel}){why}",
            f"use {takes}",
        )
    )


def copy_brick(brick, source: Path, target: Path, files: dict[Path, str]) -> None:
    """`source` (a file, or every file of a folder, by its path below it) copied to `target` in
    the run's scratch dir, as `files` of the invocation."""
    source = Path(source)
    if source.is_file():
        files[target] = brick_text(brick, source)
        return
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        files[target / path.relative_to(source)] = brick_text(brick, path)


def toml_value(value) -> str:
    """A TOML value on one line (a `-c key=value` right-hand side): strings, booleans, numbers,
    lists, inline tables."""
    return toml_item(value).as_string()


def toml_item(value):
    if isinstance(value, dict):
        table = tomlkit.inline_table()
        table.update({key: toml_item(item) for key, item in value.items()})
        return table
    if isinstance(value, list | tuple):
        array = tomlkit.array()
        array.extend(toml_item(item) for item in value)
        return array
    if isinstance(value, bool | int | float | str):
        return tomlkit.item(value)
    raise TypeError(f"no TOML form for {value!r}")
