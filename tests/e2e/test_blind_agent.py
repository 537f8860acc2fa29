"""The agent and its model are blind to the cell too (docs/confinement.md): a spy agent, on every
harness, prints where it works, its HOME and TMPDIR, its environment, its descriptors, its mounts
and what it can list; neither its transcript nor any request its model got names the cell, an
axis value, the run's folder or the results."""

from __future__ import annotations

import re

import pytest

from tests.e2e.workflow import make_project, set_agent, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# The cells are zqplain and zqrule: words that appear nowhere else.
FORBIDDEN = ["zqplain", "zqrule", "runs/", "results/", ".secret"]
# Its parent's command line and every other it can read: without a pid namespace of its own,
# the run step's (`--cell <slug> … --transcript results/…`) would be among them.
LOOK = (
    "pwd; echo HOME=$HOME TMPDIR=$TMPDIR; env; ls -a / .. $HOME $TMPDIR; "
    "for f in /proc/self/fd/*; do readlink $f; done; cat /proc/self/mountinfo; "
    "ls /proc; tr '\\\\0' ' ' < /proc/1/cmdline; echo; "
    "printf %s%s ZQ- PARENT=; tr '\\\\0' ' ' < /proc/$PPID/cmdline; echo; "
    "for p in /proc/[0-9]*; do tr '\\\\0' ' ' < $p/cmdline; echo; done; printf %s%s ZQ- LOOKED"
)
# What only its output holds, never its command (Gemini CLI refuses `$(…)`): that it looked to
# the end, and its parent's command line (pi's reads "pi").
LOOKED = "ZQ-LOOKED"
PARENT = re.compile(r"ZQ-PARENT=\S")
SPY_POLICY = f"""
[policy]
description = "Looks where it is and what it can see."

[[steps]]
id = "look"
action = "run"
command = "{LOOK}"

[final]
text = "I looked around."
"""
HARNESS_DEMOS = [
    ("demo", "pi_installation"),
    ("demo-claude-code", "claude_installation"),
    ("demo-codex", "codex_installation"),
    ("demo-gemini", "gemini_installation"),
]


def blind_cells(project, scenario: str) -> None:
    """The demo's context axis with values no text contains, and no thinking axis."""
    toml = project / scenario / "scenario.toml"
    text = toml.read_text().replace(
        'context = ["nothing", "rule"]', 'context = ["zqplain", "zqrule"]'
    )
    text = text.replace("[deltas.context.rule]", "[deltas.context.zqrule]")
    text = re.sub(r'(?m)^thinking = \["off", "high"\]\n', "", text)
    text = re.sub(r"(?ms)^\[deltas\.thinking\.high\]\n.*?(?=^\[|\Z)", "", text)
    toml.write_text(text)


def spied(tmp_path, installation, scenario: str, confinement: str = "bwrap") -> list:
    """The runs of the spy agent on `scenario`'s two cells (agent runs only)."""
    project = make_project(
        tmp_path / "project", installation.root.parents[1], repetitions=1, scenario=scenario
    )
    config = project / "config" / "config.yaml"
    config.write_text(config.read_text() + f"confinement: {confinement}\n")
    blind_cells(project, scenario)
    (project / scenario / "spy.toml").write_text(SPY_POLICY)
    set_agent(project, model="spy.toml", timeout="2m", scenario=scenario)
    result = snakemake(project, "--until", "run_agent")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    runs = sorted((project / "results" / scenario / "runs").glob("*/r01"))
    assert [run.parent.name for run in runs] == ["zqplain", "zqrule"]
    for run in runs:
        transcript = (run / "transcript.jsonl").read_text()
        requests = (run / "model-requests.jsonl").read_text()
        assert LOOKED in transcript and LOOKED in requests  # it looked, and told
    return runs


@pytest.mark.parametrize(
    ("scenario", "installed"), HARNESS_DEMOS, ids=[s for s, _ in HARNESS_DEMOS]
)
def test_a_spy_agent_and_its_model_find_nothing_that_names_the_cell(
    tmp_path, request, scenario, installed
):
    for run in spied(tmp_path, request.getfixturevalue(installed), scenario):
        transcript = (run / "transcript.jsonl").read_text()
        requests = (run / "model-requests.jsonl").read_text()
        assert "HOME=/agent" in transcript  # its own HOME, inside
        assert PARENT.search(transcript), context_of(transcript, "ZQ-PARENT")
        for word in FORBIDDEN:
            assert word not in transcript, (run, word, context_of(transcript, word))
            assert word not in requests, (run, word, context_of(requests, word))


def test_unconfined_the_same_spy_finds_its_cell(tmp_path, pi_installation):
    # The control: with `confinement: none`, the same look names each run's own cell and the
    # results folder (the run step's command line), in its transcript and in what its model got.
    for run in spied(tmp_path, pi_installation, "demo", confinement="none"):
        cell = run.parent.name
        for name in ("transcript.jsonl", "model-requests.jsonl"):
            text = (run / name).read_text()
            assert f"--cell {cell} " in text and f"results/demo/runs/{cell}/" in text, name


def context_of(text: str, word: str) -> str:
    at = text.index(word)
    return text[max(0, at - 300) : at + 100]
