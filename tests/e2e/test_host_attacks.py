"""Nothing an agent wrote is interpreted outside its sandbox, and nothing it does passes its run's
limits (docs/confinement.md). The real pi binary, driven by offline policies whose tool calls
attack, runs through the real workflow.

- git settings the agent writes into its own clone (`core.fsmonitor`, a clean filter, a
  textconv driver, attributes, `core.worktree`) are live: git runs them inside the agent's own
  sandbox (the control: the files they write there reach result.patch). None runs on the host
  when agentab builds the patch: a marker each would write on the host stays absent, the
  validator and the seals' key are untouched, and the patch carries no host file.
- each limit, probed just past it, ends the run as `failed: limit <which>`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.adversary import digest, run_step, run_workflow, scenario_with_cells
from tests.e2e.workflow import REPO, SNAKEMAKE, make_project

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LIMITS = 'limits = { memory = "700M", processes = 96, disk = "120M", patch = "1M" }'
FIX = {"action": "edit", "path": "calc.py", "old": "len(values) - 1", "new": "len(values)"}


def git_attacks(marker: Path, host_folder: Path) -> list[dict]:
    """Each payload touches `marker`-<kind> (a host path: it exists only if the payload ran on
    the host) and a file in the cwd (in the sandbox: the clone, so the patch shows it ran)."""

    def payload(kind: str, then: str) -> str:
        return f"touch {marker}-{kind} 2>/dev/null; touch {kind}-ran; {then}"

    return [
        {"id": "read", "say": "Reading calc.py.", "action": "read", "path": "calc.py"},
        {"id": "fix", "say": "Fixing mean.", **FIX},
        run_step(
            "fsmonitor", f"git config core.fsmonitor {json.dumps(payload('fsmonitor', 'false'))}"
        ),
        run_step("filter", f"git config filter.x.clean {json.dumps(payload('filter', 'cat'))}"),
        run_step(
            "textconv", f"git config diff.x.textconv {json.dumps(payload('textconv', 'cat'))}"
        ),
        {
            "id": "hook",
            "action": "write",
            "path": ".git/hooks/post-index-change",
            "content": f"#!/bin/sh\n{payload('hook', 'true')}\n",
        },
        run_step("hook-mode", "chmod +x .git/hooks/post-index-change"),
        run_step("attributes", "printf '* filter=x diff=x\\n' > .git/info/attributes"),
        # Live, in the agent's own sandbox: git runs the fsmonitor, filter and textconv here.
        run_step("own-git", "git status --short; git add -A; git diff --cached >/dev/null; true"),
        run_step("worktree", f"git config core.worktree {host_folder}"),
        # Lines written into the harness's stream (its facts are read from it): refused.
        run_step(
            "stream",
            # printf builds the line: the command's own text never holds the marker.
            'for p in /proc/[0-9]*; do printf \'{"type": "zq%s"}\\n\' forged '
            "> $p/fd/1 2>/dev/null; done; true",
        ),
    ]


def limit_probes() -> dict[str, list[dict]]:
    """One cell per limit: a probe just past it."""
    return {
        "processes": [run_step("processes", "for i in $(seq 150); do sleep 3 & done; wait; true")],
        "memory": [run_step("memory", "python3 -c 'x = bytearray(900 * 2**20); print(len(x))'")],
        "disk": [run_step("disk", "dd if=/dev/zero of=big.bin bs=1M count=200; ls -la big.bin")],
        "patch": [run_step("patch", "head -c 2500000 /dev/urandom > blob.bin; ls -la blob.bin")],
    }


@pytest.fixture(scope="module")
def attacked(tmp_path_factory, pi_installation) -> dict:
    """One workflow: a cell whose agent poisons its clone's git, and one per limit probe."""
    root = tmp_path_factory.mktemp("host-attacks")
    project = make_project(root / "project", pi_installation.root.parents[1], repetitions=1)
    marker = root / "host-marker"
    cells = {"git": git_attacks(marker, project / "demo"), **limit_probes()}
    scenario_with_cells(project, cells, limits=LIMITS)
    validator = digest(project / "demo" / "validators" / "behaviour.py")
    result = run_workflow(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    runs = project / "results" / "demo" / "runs"
    return {"project": project, "marker": marker, "runs": runs, "validator": validator}


def run_files(attacked: dict, cell: str) -> tuple[dict, dict, bytes]:
    folder = attacked["runs"] / cell / "r01"
    record = json.loads((folder / "run.json").read_text())
    measures = json.loads((folder / "measures.json").read_text())
    return record, measures, (folder / "result.patch").read_bytes()


def test_git_settings_of_the_agent_run_in_its_sandbox_never_on_the_host(attacked):
    record, measures, patch = run_files(attacked, "git")
    # The control: git ran each payload, in the agent's own sandbox (its files are its work).
    for kind in ("fsmonitor", "filter", "textconv", "hook"):
        assert f"{kind}-ran" in record["patch"]["files"], record["patch"]["files"]
    # Nothing ran on the host: no marker, the validator and the demo's files as they were.
    assert sorted(p.name for p in attacked["marker"].parent.glob("host-marker*")) == []
    assert (
        digest(attacked["project"] / "demo" / "validators" / "behaviour.py")
        == attacked["validator"]
    )
    stream = attacked["runs"] / "git" / "r01" / "stream.jsonl"
    assert "Trying stream" in stream.read_text() and "zqforged" not in stream.read_text()
    # core.worktree pointed at a host folder: the patch carries none of its files.
    assert "scenario.toml" not in record["patch"]["files"]
    assert b"scenario.toml" not in patch
    # And the run still measures: the real validator scores the real fix.
    assert measures["status"] == "valid", measures
    assert measures["metrics"]["tests_pass"] is True
    assert record["patch"]["files"][0] == "calc.py"


def test_the_seals_key_is_never_read_by_what_the_agent_left(attacked):
    secret = attacked["project"] / "results" / "demo" / ".secret"
    assert secret.is_file()
    # Every run's seal still holds with the key as it is: nothing rewrote or replaced it.
    done = subprocess.run(
        [str(SNAKEMAKE.parent / "agentab"), "runs", str(secret.parent)],
        capture_output=True,
        text=True,
        cwd=attacked["project"],
    )
    assert done.returncode == 0, done.stderr
    assert "changed-after-the-run" not in done.stdout, done.stdout
    assert done.stdout.count("\n") >= 5, done.stdout  # every run listed


@pytest.mark.parametrize("which", ["processes", "memory", "disk", "patch"])
def test_a_probe_just_past_a_limit_ends_as_failed_limit(attacked, which):
    record, measures, patch = run_files(attacked, which)
    assert record["outcome"]["status"] == "failed", record["outcome"]
    assert record["outcome"]["reason"].startswith("limit "), record["outcome"]
    assert which in record["limits"]["reached"], record["limits"]
    assert measures["status"] == "failed"
    assert record["limits"]["declared"] == {
        "memory": "700M", "processes": 96, "disk": "120M", "patch": "1M",
    }  # fmt: skip
    if which == "patch":
        assert patch == b"" and record["patch"]["kept"] is False
        assert record["patch"]["bytes"] > 1 << 20
        assert record["patch"]["files"] == ["blob.bin"]
    validators = sorted((attacked["runs"] / which / "r01" / "validators").glob("*.json"))
    assert validators, "the validators' outputs"
    for output in validators:
        assert "not scored" in json.loads(output.read_text())["problem"]


def test_a_run_within_its_limits_reaches_none(attacked):
    record, _, _ = run_files(attacked, "git")
    assert record["limits"]["reached"] == []
    enforced = record["limits"]["enforced"]
    assert enforced["memory"].startswith("cgroup"), enforced  # root in CI: a cgroup per run
    assert enforced["disk"].startswith("a tmpfs"), enforced


def test_no_work_folder_or_mount_outlives_the_workflow(attacked):
    work = attacked["project"] / ".agentab" / "work"
    assert sorted(work.iterdir()) == []
    mounts = Path("/proc/self/mounts").read_text()
    assert str(work) not in mounts
    assert REPO.is_dir()


# The git attacks, as a smoke set, on each other harness's demo (each drives git from its own
# shell tool).
OTHER_HARNESSES = [
    ("demo-claude-code", "claude_installation"),
    ("demo-codex", "codex_installation"),
    ("demo-gemini", "gemini_installation"),
]


@pytest.mark.parametrize(
    ("scenario", "installed"), OTHER_HARNESSES, ids=[s for s, _ in OTHER_HARNESSES]
)
def test_git_settings_never_run_on_the_host_with_any_harness(
    tmp_path, request, scenario, installed
):
    installation = request.getfixturevalue(installed)
    project = make_project(
        tmp_path / "project", installation.root.parents[1], repetitions=1, scenario=scenario
    )
    marker = tmp_path / "host-marker"
    # The demo's own limits: Gemini CLI alone takes more memory than the probes' scenario gives.
    cells = {"git": git_attacks(marker, project / scenario)}
    scenario_with_cells(project, cells, scenario, limits="")
    result = run_workflow(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    folder = project / "results" / scenario / "runs" / "git" / "r01"
    record = json.loads((folder / "run.json").read_text())
    # The control: git ran the clean filter in the agent's own sandbox (each harness's shell
    # runs git its own way; the filter runs under all of them).
    assert "filter-ran" in record["patch"]["files"], record["patch"]
    assert sorted(p.name for p in tmp_path.glob("host-marker*")) == []
    assert "scenario.toml" not in record["patch"]["files"]
    measures = json.loads((folder / "measures.json").read_text())
    assert measures["metrics"]["tests_pass"] is True, measures
