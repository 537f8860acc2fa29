"""Per-brick use (docs/synthesis.md) through the real workflow, on each real harness: one offline
policy uses what the cell gives (loads the skill the way its harness does: pi and Codex by
reading its SKILL.md at the path their listing gives, Claude Code through its `Skill` tool;
calls an extension's tool: pi's declared tool, Gemini CLI's MCP server's), the other never
does. Three cells: `bare` (no brick), `given` (the bricks, the policy that uses them) and
`ignored` (the bricks, the policy that never does).

One workflow per harness, shared by every test of it: the use recorded exactly in each run's
measures.json, scored as `bricks_used.<brick>` without a validator; its rate and gap in the
synthesis beside the bricks' delivery; the warning about `ignored`; the column of `agentab
runs`; the first use marked on the run page.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.harness_world import definition
from tests.e2e.workflow import SNAKEMAKE, make_project, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPETITIONS = 2
SKILL = definition("zq-skill", "Use when ZQ-GAMMA work is asked for.", "Say gamma.")
PI_EXTENSION = """
import { Type } from "@earendil-works/pi-ai";
import { defineTool } from "@earendil-works/pi-coding-agent";

export default function (pi) {
  pi.registerTool(defineTool({
    name: "brick_probe",
    label: "Brick probe",
    description: "Looks up ZQ facts.",
    parameters: Type.Object({ note: Type.String() }),
    async execute(_id, params) {
      return { content: [{ type: "text", text: "ZQ-TOOL-RAN " + params.note }], details: {} };
    },
  }));
}
"""
# A Gemini CLI extension whose MCP server (stdio, newline-delimited JSON-RPC) adds one tool.
MCP_SERVER = """#!/usr/bin/env python3
import json, sys

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, result = message.get("method"), None
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "zq", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "zq_lookup", "description": "Looks up ZQ facts.",
                             "inputSchema": {"type": "object",
                                             "properties": {"topic": {"type": "string"}}}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "ZQ-MCP-RAN"}]}
    reply = {"jsonrpc": "2.0", "id": message["id"]}
    reply.update({"result": result} if result is not None else
                 {"error": {"code": -32601, "message": "no such method"}})
    print(json.dumps(reply), flush=True)
"""
GEMINI_EXTENSION = {
    "name": "zqext",
    "version": "1.0.0",
    "mcpServers": {"zq": {"command": "python3", "args": ["${extensionPath}/server.py"]}},
}
USES = """
[policy]
description = "Uses what it was given: loads the skill zq-skill where it is listed, calls an extension's tool where one is offered, then reads calc.py."

[[steps]]
id = "skill"
action = "load_skill"
skill = "zq-skill"

[[steps]]
id = "pi-extension"
tool = "brick_probe"
input = { note = "gamma" }

[[steps]]
id = "gemini-extension"
tool = "mcp_zq_zq_lookup"
input = { topic = "gamma" }

[[steps]]
id = "read"
action = "read"
path = "calc.py"

[final]
text = "Done."
"""
NEVER = """
[policy]
description = "Never uses a brick: reads calc.py and stops."

[[steps]]
id = "read"
action = "read"
path = "calc.py"

[final]
text = "Done."
"""


@dataclass(frozen=True)
class Case:
    """One harness: its demo folder (the etalon and task), what the `given` cell gets, and
    what each brick's record is in a run of the policy that uses it."""

    demo: str
    installed: str
    bricks: dict[str, list[str]]
    used: dict[str, dict] = field(default_factory=dict)  # brick -> its record when used
    ignored: dict[str, dict] = field(default_factory=dict)  # brick -> its record when not
    unproven: tuple[str, ...] = ()  # bricks whose delivery the harness cannot prove


def skill_record(loaded_by: str, tool: str, turn: int = 1) -> tuple[dict, dict]:
    base = {"brick": "zq-skill", "kind": "skills", "rel": "bricks/zqskill", "files": 2}
    used = base | {"used": True, "first_turn": turn, "calls": {tool: 1}}
    used |= {"loaded_by": loaded_by, "files_read": 1}
    never = base | {"used": False, "first_turn": None, "calls": {}}
    return used, never | {"loaded_by": None, "files_read": 0}


def tool_record(brick: str, rel: str, tool: str, declares: list[str], turn: int) -> tuple:
    base = {"brick": brick, "kind": "extensions", "rel": rel, "declares": declares}
    used = base | {"used": True, "first_turn": turn, "calls": {tool: 1}}
    return used, base | {"used": False, "first_turn": None, "calls": {}}


PI_SKILL, PI_SKILL_IGNORED = skill_record("read", "read")
PI_TOOL, PI_TOOL_IGNORED = tool_record(
    "probe", "bricks/probe.ts", "brick_probe", ["brick_probe"], 2
)
CLAUDE_SKILL, CLAUDE_SKILL_IGNORED = skill_record("skill tool", "Skill")
CODEX_SKILL, CODEX_SKILL_IGNORED = skill_record("read", "command_execution")
GEMINI_TOOL, GEMINI_TOOL_IGNORED = tool_record(
    "zqext", "bricks/zqext", "mcp_zq_zq_lookup", ["mcp_zq_*"], 1
)
CASES = {
    "pi": Case(
        "demo",
        "pi_installation",
        {"skills": ["bricks/zqskill"], "extensions": ["bricks/probe.ts"]},
        {"zq-skill": PI_SKILL, "probe": PI_TOOL},
        {"zq-skill": PI_SKILL_IGNORED, "probe": PI_TOOL_IGNORED},
    ),
    "claude-code": Case(
        "demo-claude-code",
        "claude_installation",
        {"skills": ["bricks/zqskill"]},
        {"zq-skill": CLAUDE_SKILL},
        {"zq-skill": CLAUDE_SKILL_IGNORED},
    ),
    "codex": Case(
        "demo-codex",
        "codex_installation",
        {"skills": ["bricks/zqskill"]},
        {"zq-skill": CODEX_SKILL},
        {"zq-skill": CODEX_SKILL_IGNORED},
    ),
    "gemini": Case(
        "demo-gemini",
        "gemini_installation",
        {"extensions": ["bricks/zqext"]},
        {"zqext": GEMINI_TOOL},
        {"zqext": GEMINI_TOOL_IGNORED},
        unproven=("zqext",),  # Gemini CLI keeps no record of loading an extension
    ),
}


def usage_scenario(folder: Path, case: Case) -> str:
    """The demo's scenario (its harness, etalon and task) with the three cells, scoring the
    use of every brick and nothing else."""
    demo = (folder / "scenario.toml").read_text()
    agent = re.search(r"(?ms)^\[agent\]\n.*?(?=^\[)", demo).group(0)
    agent = re.sub(r"(?m)^model = .*$", 'model = "uses.toml"', agent)
    metrics = [f"bricks_used.{name}" for name in case.used]
    bricks = "".join(f"{kind} = {json.dumps(paths)}\n" for kind, paths in case.bricks.items())
    return f"""
[scenario]
name = "usage"
question = "Does the agent use the bricks its cell gives it?"

[task]
prompt_file = "task.md"

[etalon]
repo = "calc.bundle"
tag = "v1.0"

{agent}
[protocol]
repetitions = {REPETITIONS}
limits = {{ memory = "2G", processes = 256, disk = "1G", patch = "1M" }}

[axes]
setup = ["bare", "given"]

[deltas.setup.given]
{bricks}
[deltas.policy.never]
model = "never.toml"

[variants.ignored]
setup = "given"
policy = "never"

[validation]
metrics = {json.dumps(metrics)}

[validators.nothing]  # the use is a built-in metric: no validator returns it
mode = "script"
run = ["validators/nothing.py"]
"""


def write_bricks(folder: Path) -> None:
    (folder / "bricks" / "zqskill").mkdir(parents=True)
    (folder / "bricks" / "zqskill" / "SKILL.md").write_text(SKILL)
    (folder / "bricks" / "zqskill" / "reference.md").write_text("ZQ reference.\n")
    (folder / "bricks" / "probe.ts").write_text(PI_EXTENSION)
    (folder / "bricks" / "zqext").mkdir()
    (folder / "bricks" / "zqext" / "gemini-extension.json").write_text(json.dumps(GEMINI_EXTENSION))
    (folder / "bricks" / "zqext" / "server.py").write_text(MCP_SERVER)
    nothing = folder / "validators" / "nothing.py"
    nothing.write_text("#!/usr/bin/env python3\nprint('{\"metrics\": {}}')\n")
    nothing.chmod(0o755)
    (folder / "uses.toml").write_text(USES)
    (folder / "never.toml").write_text(NEVER)


@pytest.fixture(scope="module", params=list(CASES))
def measured(request, tmp_path_factory) -> tuple[Case, Path]:
    """The workflow run once for a harness: (its case, the project)."""
    case = CASES[request.param]
    installation = request.getfixturevalue(case.installed)
    root = tmp_path_factory.mktemp(f"usage-{request.param}") / "project"
    project = make_project(root, installation.root.parents[1], scenario=case.demo)
    folder = project / case.demo
    write_bricks(folder)
    (folder / "scenario.toml").write_text(usage_scenario(folder, case))
    result = snakemake(project, timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return case, project


def measures_of(project: Path, cell: str) -> list[dict]:
    files = sorted((project / "results" / "usage" / "runs" / cell).glob("r*/measures.json"))
    assert len(files) == REPETITIONS, files
    return [json.loads(path.read_text()) for path in files]


def test_each_run_records_the_use_of_each_brick_exactly(measured):
    case, project = measured
    for measures in measures_of(project, "given"):
        assert measures["status"] == "valid", measures["problems"]
        records = {r["brick"]: r for r in measures["builtin"]["brick_usage"]}
        assert records == case.used
        assert measures["builtin"]["bricks_used"] == dict.fromkeys(case.used, True)
        assert measures["metrics"] == {f"bricks_used.{b}": True for b in case.used}
        assert measures["receipt"]["bricks"] == {
            record["rel"]: None if brick in case.unproven else True
            for brick, record in case.used.items()
        }
    for measures in measures_of(project, "ignored"):
        records = {r["brick"]: r for r in measures["builtin"]["brick_usage"]}
        assert records == case.ignored
        assert measures["metrics"] == {f"bricks_used.{b}": False for b in case.used}
    for measures in measures_of(project, "bare"):
        # No brick in the cell: none used, and the metric of another cell's brick is false.
        assert measures["builtin"]["brick_usage"] == [] and measures["builtin"]["bricks_used"] == {}
        assert measures["metrics"] == {f"bricks_used.{b}": False for b in case.used}


def test_the_synthesis_shows_the_rate_its_gap_and_delivery_beside_use(measured):
    case, project = measured
    results = project / "results" / "usage"
    synthesis = (results / "synthesis.md").read_text()
    for brick in case.used:
        metric = f"bricks_used.{brick}"
        values = synthesis.split("## Values per cell")[1].split("##")[0]
        assert re.search(r"\| given \| 2/2", values) and re.search(r"\| ignored \| 0/2", values)
        with (results / "gaps.csv").open() as table:
            gaps = {(row["cell"], row["metric"]): row for row in csv.DictReader(table)}
        assert float(gaps["given", metric]["gap"]) == 1.0
        assert float(gaps["ignored", metric]["gap"]) == 0.0
        assert f"| given | {metric} | 2/2" in synthesis  # the gap table's row
        table = synthesis.split("## Bricks: delivered and used")[1].split("##")[0]
        delivered = "2/2 given" if brick in case.unproven else "2/2"
        turn = case.used[brick]["first_turn"]
        assert re.search(
            rf"\| given \| `{brick}` \| \w+ \| {delivered}[^|]*\| 2/2 \| {turn} \|", table
        )
        assert re.search(
            rf"\| ignored \| `{brick}` \| \w+ \| {delivered}[^|]*\| 0/2 \| — \|", table
        )
    assert "| bare |" not in synthesis.split("## Bricks: delivered and used")[1].split("##")[0]


def test_the_synthesis_warns_about_a_delivered_brick_left_unused(measured):
    case, project = measured
    synthesis = (project / "results" / "usage" / "synthesis.md").read_text()
    warnings = synthesis.split("## Warnings")[1].split("## Matrix")[0]
    for brick in case.used:
        reached = "was given to the agent" if brick in case.unproven else "reached the model"
        assert re.search(
            rf"`{brick}` {reached}[^\n]* in 2/2 runs of `ignored` and was used in 0", warnings
        )
        assert "runs of `given`" not in warnings


def test_agentab_runs_shows_which_bricks_each_run_used(measured):
    case, project = measured
    listed = subprocess.run(
        [str(SNAKEMAKE.parent / "agentab"), "runs", "results/usage"],
        cwd=project, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    lines = {line.split()[0]: line for line in listed.splitlines()[1:]}
    assert len(lines) == 3 * REPETITIONS and "BRICKS USED" in listed.splitlines()[0]
    for rep in range(1, REPETITIONS + 1):
        for brick, record in case.used.items():
            assert f"{brick} (turn {record['first_turn']})" in lines[f"given/r{rep:02d}"]
            assert f"{brick} (no)" in lines[f"ignored/r{rep:02d}"]
    for brick in case.used:  # the runs that left a brick alone, whether or not it is scored
        unused = subprocess.run(
            [str(SNAKEMAKE.parent / "agentab"), "runs", "results/usage", "--metric", f"bricks_used.{brick}=false", "--json"],
            cwd=project, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert [json.loads(line)["run"] for line in unused.splitlines()] == [
            f"bare/r{rep:02d}" for rep in range(1, REPETITIONS + 1)
        ] + [f"ignored/r{rep:02d}" for rep in range(1, REPETITIONS + 1)]


def test_the_run_page_marks_the_turn_of_each_first_use(measured):
    case, project = measured
    page = (project / "results" / "usage" / "report" / "runs" / "given" / "r01.html").read_text()
    for brick, record in case.used.items():
        turn = record["first_turn"]
        marked = re.search(
            rf'<li class="turn turn-assistant" id="turn-{turn}">\s*'
            rf'<div class="brick-first-use">first use of [^\n]*<code>{brick}</code>',
            page,
        )
        assert marked, brick
        assert f'<a href="#turn-{turn}">turn {turn}</a>' in page
    ignored = (
        project / "results" / "usage" / "report" / "runs" / "ignored" / "r01.html"
    ).read_text()
    assert "brick-first-use" not in ignored
