"""Environments that differ only by the etalon's own package are one environment: each mined
task's commit installs its own version of the project, which is the task, not a setup to pin."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from types import SimpleNamespace

from agentab.run.setup import LIST_PACKAGES
from agentab.synthesis.environment import differing_environments


def test_the_listing_names_the_packages_installed_from_the_checkout(tmp_path):
    site, work = tmp_path / "site", tmp_path / "work"
    work.mkdir()
    for name, url in (("shop", f"file://{work}"), ("attrs", "https://files.example/attrs")):
        info = site / f"{name}-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / "direct_url.json").write_text(json.dumps({"url": url}))
    listed = subprocess.run(
        [sys.executable, "-S", "-c", LIST_PACKAGES],
        cwd=work, env={"PYTHONPATH": str(site)}, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert "shop==1.0" in listed and "attrs==1.0" in listed
    assert [line for line in listed if line.startswith("project ")] == ["project shop"]


def test_environments_that_differ_only_by_the_projects_version_are_no_warning(tmp_path):
    def run(name, lines):
        body = "\n".join(lines)
        folder = tmp_path / "runs" / name
        folder.mkdir(parents=True)
        (folder / "environment.txt").write_text(body + "\n")
        digest = hashlib.sha256(body.encode()).hexdigest()
        return SimpleNamespace(run=name, cell="fix", provenance={"environment_sha256": digest})

    def listing(version, pytest="8.3.4"):
        return ["python 3.11.2 /workspace/.venv", f"pytest=={pytest}", f"shop=={version}",
                "project shop"]  # fmt: skip

    tasks = [run(f"fix/r{n:02d}", listing("0.1.dev3")) for n in range(1, 4)]
    tasks += [run(f"fix/r{n:02d}", listing("0.1.dev7")) for n in range(4, 6)]
    assert differing_environments(SimpleNamespace(results_dir=tmp_path, runs=tasks)) == []
    moved = run("fix/r06", listing("0.1.dev9", pytest="8.3.5"))
    result = SimpleNamespace(results_dir=tmp_path, runs=[*tasks, moved])
    (warning,) = differing_environments(result)
    assert warning.startswith("the runs got 2 different environments from the same setup:")
    assert "`pytest==8.3.5` instead of `pytest==8.3.4`; compare" in warning
    assert "shop" not in warning
