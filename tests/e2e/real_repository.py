"""A real repository for end-to-end tests: more-itertools at v8.0.2, built from its sdist on
PyPI (the registries are what CI reaches; github.com may not be) into a git bundle with the
upstream tag, by the recipe of scenarios/more-itertools/README.md as written, and the shipped
scenario pointed at it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "scenarios" / "more-itertools" / "README.md"
PROJECT, VERSION, TAG = "more-itertools", "8.0.2", "v8.0.2"
RECIPE_FOLDER = "/tmp/mi"  # where the README builds it; a test builds it in a folder of its own
# No git configuration of the caller's: a `safe.directory` there would hide what the recipe must
# do by itself (pip keeps the caller's HOME: its configuration may be how PyPI is reached).
NO_GIT_CONFIG = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def sdist_recipe(readme: Path = README) -> str:
    """The README's shell block that builds the bundle, as a person would paste it."""
    blocks = re.findall(r"```bash\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    (recipe,) = [block for block in blocks if "pip download" in block]
    return recipe


def bundle_from_sdist(folder: Path) -> Path:
    """more-itertools 8.0.2's sdist as a git bundle tagged v8.0.2: the tagged tree less the
    repository's CI files, and less the sdist's build metadata, which setup makes anew. Run as
    the README says, from the project's folder."""
    folder.mkdir(parents=True, exist_ok=True)
    recipe = sdist_recipe().replace(RECIPE_FOLDER, str(folder))
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", recipe],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), **NO_GIT_CONFIG},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return folder / f"{PROJECT}-{VERSION}" / f"{PROJECT}.bundle"


def point_at(scenario: Path, bundle: Path) -> None:
    text = scenario.read_text()
    scenario.write_text(re.sub(r'(?m)^repo = "[^"]*"', f'repo = "{bundle}"', text, count=1))
