"""Each brick of a cell has its own receipt (docs/receipts.md), on the requests real harnesses sent: a
cell with two context files and a skill, on pi, Claude Code and Codex. Every brick is delivered;
then, in a copy of the request log, one brick is taken out as a harness that dropped it would
have sent it, and only that brick's receipt says so. A skill counts only when its name and its
description are listed together, exactly as in its SKILL.md."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentab.harnesses import get_harness
from agentab.run.receipts import brick_entry, read_requests
from tests.e2e.workflow import make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ALPHA, BETA = "ZQ-ALPHA: always say alpha.", "ZQ-BETA: always say beta."
SKILL_NAME, SKILL_DESCRIPTION = "zq-skill", "Use when ZQ-GAMMA work is asked for."
HARNESS_DEMOS = [
    ("demo", "pi", "pi_installation"),
    ("demo-claude-code", "claude-code", "claude_installation"),
    ("demo-codex", "codex", "codex_installation"),
]


def three_bricks(project: Path, scenario: str) -> list[SimpleNamespace]:
    folder = project / scenario
    (folder / "bricks" / "zqa.md").write_text(ALPHA + "\n")
    (folder / "bricks" / "zqb.md").write_text(BETA + "\n")
    (folder / "bricks" / "zqskill").mkdir()
    (folder / "bricks" / "zqskill" / "SKILL.md").write_text(
        f"---\nname: {SKILL_NAME}\ndescription: {SKILL_DESCRIPTION}\n---\nSay gamma.\n"
    )
    toml = folder / "scenario.toml"
    text = re.sub(r'(?m)^thinking = \["off", "high"\]\n', "", toml.read_text())
    text = re.sub(r"(?ms)^\[deltas\.thinking\.high\]\n.*?(?=^\[|\Z)", "", text)
    text = text.replace(
        'context_files = ["bricks/run-tests.md"]',
        'context_files = ["bricks/zqa.md", "bricks/zqb.md"]\nskills = ["bricks/zqskill"]',
    )
    toml.write_text(text)
    return [
        SimpleNamespace(kind="context_files", rel="bricks/zqa.md", path=folder / "bricks/zqa.md"),
        SimpleNamespace(kind="context_files", rel="bricks/zqb.md", path=folder / "bricks/zqb.md"),
        SimpleNamespace(kind="skills", rel="bricks/zqskill", path=folder / "bricks/zqskill"),
    ]


def delivered(log: Path, harness, bricks) -> dict[str, bool | None]:
    requests = read_requests(log)
    turns = [request for request in requests if request.is_turn] or requests
    return {b.rel: brick_entry(b, harness, turns)["delivered"] for b in bricks}


def doctored(log: Path, out: Path, old: str, new: str) -> Path:
    """The request log as a harness would have sent it with `old` written as `new`."""
    lines = []
    for line in log.read_text().splitlines():
        record = json.loads(line)
        body = json.dumps(record["body"], ensure_ascii=False).replace(old, new)
        lines.append(json.dumps({**record, "body": json.loads(body)}, ensure_ascii=False))
    out.write_text("\n".join(lines) + "\n")
    return out


@pytest.mark.parametrize(
    ("scenario", "name", "installed"), HARNESS_DEMOS, ids=[s for s, _, _ in HARNESS_DEMOS]
)
def test_each_brick_is_proven_on_its_own(tmp_path, request, scenario, name, installed):
    installation = request.getfixturevalue(installed)
    project = make_project(
        tmp_path / "project", installation.root.parents[1], repetitions=1, scenario=scenario
    )
    bricks = three_bricks(project, scenario)
    result = snakemake(project, "--until", "run_agent")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    run = project / "results" / scenario / "runs" / "rule" / "r01"
    receipt = json.loads((run / "receipt.json").read_text())
    assert receipt["delivered"] is True, receipt["problems"]
    assert [b["delivered"] for b in receipt["bricks"]] == [True, True, True]
    harness, log = get_harness(name), run / "model-requests.jsonl"
    assert delivered(log, harness, bricks) == dict.fromkeys([b.rel for b in bricks], True)

    one_dropped = doctored(log, tmp_path / "alpha.jsonl", ALPHA, "")
    assert delivered(one_dropped, harness, bricks) == {
        "bricks/zqa.md": False,
        "bricks/zqb.md": True,
        "bricks/zqskill": True,
    }
    for old, new in (
        (SKILL_DESCRIPTION, "Use when other work is asked for."),  # its name alone is listed
        (f"{SKILL_NAME}", "zq-skillset"),  # its description, under another name
    ):
        changed = doctored(log, tmp_path / "skill.jsonl", old, new)
        assert delivered(changed, harness, bricks)["bricks/zqskill"] is False, (old, new)
