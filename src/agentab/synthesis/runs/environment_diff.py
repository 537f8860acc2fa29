"""What differs between two environments a setup made: named packages, not two hashes.

A run records the environment its setup made in `environment.txt` (the first `python3` on the
setup's path, then every installed package as `name==version`) and its hash in measures.json.
Two hashes say that runs differ; a person needs to know in what (`pytest==8.3.5` where the other
runs have `pytest==8.3.4`) to pin it. So the synthesis reads one `environment.txt` of each
environment, checked against the hash its run recorded, and names the packages that differ.

The file was listed inside the setup's sandbox, from metadata the setup wrote: it is parsed as
text, and each name is shown cut short, as a code span it cannot close.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

ENVIRONMENT_FILE = "environment.txt"
SHOWN_CHANGES = 6
NAME_CHARS = 80
TRIED_RUNS = 3
PYTHON = "python"  # the first line: `python 3.11.2 /workspace/.venv`
PROJECT = "project"  # `project shop`: a package setup installed from the checkout itself


def read_environment(results_dir: Path | None, runs, digest: str) -> dict[str, str] | None:
    """The environment of `runs` (package -> `name==version` as listed), from the first of
    their `environment.txt` files whose content has the hash they recorded; None if none has."""
    if results_dir is None:
        return None
    for run in runs[:TRIED_RUNS]:
        path = Path(results_dir) / "runs" / run.run / ENVIRONMENT_FILE
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        body = text.removesuffix("\n")
        if hashlib.sha256(body.encode()).hexdigest() == digest:
            return packages(body.splitlines())
    return None


def packages(lines: list[str]) -> dict[str, str]:
    """`name==version` lines by their name (case folded), the interpreter line by `python`;
    without the etalon's own packages (`project <name>`): each commit of a project installs its
    own version of it, which is the task, not the environment."""
    found: dict[str, str] = {}
    own = set()
    for line in lines:
        if line.startswith(f"{PYTHON} "):
            found[PYTHON] = " ".join(line.split()[:2])  # its version; its prefix is /workspace
        elif line.startswith(f"{PROJECT} "):
            own.add(line.split(" ", 1)[1].strip().lower())
        elif "==" in line:
            found[line.split("==", 1)[0].strip().lower()] = line.strip()
    return {name: line for name, line in found.items() if name not in own}


def difference(common: dict[str, str], other: dict[str, str]) -> str:
    """`pytest==8.3.5 instead of pytest==8.3.4; iniconfig==2.0.0 only there; no attrs (the
    others have attrs==23.1)`: how `other` differs from the `common` environment."""
    changes = []
    for name in sorted(set(common) | set(other)):
        mine, theirs = other.get(name), common.get(name)
        if mine == theirs:
            continue
        if mine and theirs:
            changes.append(f"{code(mine)} instead of {code(theirs)}")
        elif mine:
            changes.append(f"{code(mine)}, which the others lack")
        else:
            changes.append(f"no {code(name)} (the others have {code(theirs)})")
    shown = "; ".join(changes[:SHOWN_CHANGES])
    more = len(changes) - SHOWN_CHANGES
    return shown + (f"; and {more} more" if more > 0 else "") if changes else "no package differs"


def code(text: str) -> str:
    text = " ".join(str(text).split())
    text = text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"
    return "`" + text.replace("`", "'") + "`"
