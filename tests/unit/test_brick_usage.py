"""Per-brick use (`agentab.synthesis.runs.usage`) read from streams the real harnesses printed.

Each fixture was recorded with the real binary, confined, on the offline model, by a policy
that used its bricks the way the harness lets a model (docs/harnesses.md, "Did the agent use
what it was given"):

- pi 1.6.0 `pi/skill-and-extension.jsonl`: `read` of the skill's SKILL.md at the path pi lists,
  `cat` of its reference.md and `ls` of its folder in bash, then the extension's `brick_probe`;
- Claude Code 2.1.332 `claude_code/skill-and-agent.jsonl`: `Skill` with
  `agentab-bricks:zqskill`, `Read` of the reference in its plugin copy, `Agent` with
  `subagent_type: reviewer`; `skill-names.jsonl`: `Skill` with `zq-skill`,
  `agentab-bricks:zq-skill`, `zqskill` (refused: unknown skill) and `nope` (refused);
  `mcp-tool.jsonl`: `ToolSearch` for a deferred MCP tool, then `mcp__zqm__zq_lookup`;
- Codex 0.171.0 `codex/skill-read.jsonl`: `cat` of SKILL.md in its CODEX_HOME copy, then
  `cd <copy> && cat reference.md scripts/helper.sh`;
- Gemini CLI 0.61.0 `gemini/extension-and-agent.jsonl`: the extension's MCP tool
  `mcp_zq_zq_lookup`, then `invoke_agent` with `agent_name: reviewer`.

The demo runs of each (`demo-completed.jsonl`, Claude Code's `demo-rule-high.jsonl`) never
touch a brick: given the same bricks, none is used.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentab.harnesses import get_harness
from agentab.synthesis.runs.brick_use import brick_use_rows, brick_use_warnings
from agentab.synthesis.runs.usage import builtin_value, run_brick_usage, usage_metrics
from tests.unit.test_builtin import trajectory_of

FIXTURES = Path(__file__).parent / "fixtures"
DEMO = Path(__file__).resolve().parents[2] / "scenarios" / "demo"
SKILL_MD = (
    "---\nname: zq-skill\ndescription: Use when ZQ-GAMMA work is asked for.\n---\nSay gamma.\n"
)
SKILL = {"SKILL.md": SKILL_MD, "reference.md": "ZQ reference.\n", "scripts/helper.sh": "echo\n"}
AGENT = "---\nname: reviewer\ndescription: ZQ-AGENT reviews a change.\n---\nYou review.\n"
PI_EXTENSION = 'pi.registerTool(defineTool({ name: "brick_probe", label: "x" }));\n'
GEMINI_EXTENSION = {
    "gemini-extension.json": json.dumps(
        {"name": "zqext", "version": "1", "mcpServers": {"zq": {"command": "python3"}}}
    )
}
CLAUDE_MCP_CONFIG = json.dumps({"mcpServers": {"zqm": {"command": "python3"}}})
SKILL_AT = "/opt/bricks/bricks/zqskill"


def given(tmp_path: Path, harness: str, stream: str, bricks: list[tuple]) -> list[dict]:
    """The use read from a recorded stream: `bricks` as (kind, rel, content, seen_at), content
    a file's text or a folder's files; the frozen copies in a store as the run step leaves."""
    store = tmp_path / "bricks"
    entries = []
    for number, (kind, rel, content, seen_at) in enumerate(bricks, start=1):
        sha = f"{number:064x}"
        frozen = store / sha[:16] / Path(rel).name
        for name, text in (content if isinstance(content, dict) else {"": content}).items():
            path = frozen / name if name else frozen
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        entries.append({"kind": kind, "rel": rel, "sha256": sha, "seen_at": seen_at})
    adapter = get_harness(harness)
    transcript = tmp_path / "transcript.jsonl"
    lines = adapter.transcript(FIXTURES / stream)
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run = {"harness": harness, "bricks": entries}
    return run_brick_usage(run, trajectory_of(transcript), store)


def skill(rel="bricks/zqskill", seen_at=(SKILL_AT,)) -> tuple:
    return ("skills", rel, SKILL, list(seen_at))


def record(brick, kind, rel, **fields) -> dict:
    return {"brick": brick, "kind": kind, "rel": rel, **fields}


def skill_record(**fields) -> dict:
    return record("zq-skill", "skills", "bricks/zqskill", files=3, **fields)


UNUSED_SKILL = skill_record(used=False, first_turn=None, calls={}, loaded_by=None, files_read=0)


def test_pi_loads_a_skill_by_reading_its_files_and_calls_an_extensions_tool(tmp_path):
    bricks = [
        skill(),
        ("extensions", "bricks/probe.ts", PI_EXTENSION, ["/opt/bricks/bricks/probe.ts"]),
    ]
    usage = given(tmp_path, "pi", "pi/skill-and-extension.jsonl", bricks)
    assert usage == [
        # SKILL.md by `read` (turn 1), reference.md by `cat` in bash (turn 2); `ls` of the
        # folder names no file of it
        skill_record(
            used=True, first_turn=1, calls={"bash": 1, "read": 1}, loaded_by="read", files_read=2
        ),
        record(
            "probe",
            "extensions",
            "bricks/probe.ts",
            used=True,
            first_turn=3,
            calls={"brick_probe": 1},
            declares=["brick_probe"],
        ),  # fmt: skip
    ]
    assert usage_metrics(usage) == {
        "bricks_used": {"zq-skill": True, "probe": True},
        "brick_calls": {"zq-skill": {"bash": 1, "read": 1}, "probe": {"brick_probe": 1}},
    }
    never = given(tmp_path / "never", "pi", "pi/demo-completed.jsonl", bricks)
    assert [entry["used"] for entry in never] == [False, False]


def test_claude_code_loads_a_skill_through_its_skill_tool_and_runs_an_agent(tmp_path):
    copies = (SKILL_AT, "/agent/plugin/skills/zqskill")
    agent = ("agents", "bricks/reviewer.md", AGENT, ["/opt/bricks/bricks/reviewer.md"])
    usage = given(
        tmp_path, "claude-code", "claude_code/skill-and-agent.jsonl", [skill(seen_at=copies), agent]
    )
    assert usage == [
        # the Skill tool read SKILL.md; Read took reference.md from the plugin copy
        skill_record(
            used=True, first_turn=1, calls={"Read": 1, "Skill": 1}, loaded_by="skill tool",
            files_read=2,
        ),
        record("reviewer", "agents", "bricks/reviewer.md", used=True, first_turn=3, calls={"reviewer": 1}),
    ]  # fmt: skip
    never = given(
        tmp_path / "never",
        "claude-code",
        "claude_code/demo-rule-high.jsonl",
        [skill(seen_at=copies), agent],
    )
    assert never == [UNUSED_SKILL, record("reviewer", "agents", "bricks/reviewer.md", used=False, first_turn=None, calls={})]  # fmt: skip


def test_claude_code_counts_only_the_skill_calls_it_did_not_refuse(tmp_path):
    copies = (SKILL_AT, "/agent/plugin/skills/zqskill")
    usage = given(tmp_path, "claude-code", "claude_code/skill-names.jsonl", [skill(seen_at=copies)])
    # `zq-skill` and `agentab-bricks:zq-skill` loaded it; `zqskill` and `nope` were refused
    assert usage == [
        skill_record(
            used=True, first_turn=1, calls={"Skill": 2}, loaded_by="skill tool", files_read=1
        )
    ]


def test_claude_code_names_an_mcp_servers_tools_after_the_server(tmp_path):
    config = (
        "extensions",
        "bricks/zq.mcp.json",
        CLAUDE_MCP_CONFIG,
        ["/opt/bricks/bricks/zq.mcp.json"],
    )
    usage = given(tmp_path, "claude-code", "claude_code/mcp-tool.jsonl", [config])
    assert usage == [
        record(
            "zq.mcp", "extensions", "bricks/zq.mcp.json",
            used=True, first_turn=2, calls={"mcp__zqm__zq_lookup": 1}, declares=["mcp__zqm__*"],
        )
    ]  # fmt: skip


def test_codex_reads_a_skill_in_its_shell_from_where_its_cd_went(tmp_path):
    copies = (SKILL_AT, "/agent/codex-home/skills/zqskill")
    agent = (
        "agents",
        "bricks/reviewer.toml",
        'description = "x"\n',
        ["/opt/bricks/bricks/reviewer.toml"],
    )
    usage = given(tmp_path, "codex", "codex/skill-read.jsonl", [skill(seen_at=copies), agent])
    assert usage[0] == skill_record(
        used=True, first_turn=1, calls={"command_execution": 2}, loaded_by="read", files_read=3
    )
    assert usage[1]["used"] is None and "spawn_agent" in usage[1]["why"]  # not measured
    never = given(
        tmp_path / "never", "codex", "codex/demo-completed.jsonl", [skill(seen_at=copies)]
    )
    assert never == [UNUSED_SKILL]


def test_gemini_calls_an_extensions_mcp_tool_and_invokes_an_agent(tmp_path):
    extension = ("extensions", "bricks/zqext", GEMINI_EXTENSION, ["/opt/bricks/bricks/zqext"])
    agent = ("agents", "bricks/reviewer.md", AGENT, ["/opt/bricks/bricks/reviewer.md"])
    context = (
        "context_files",
        "bricks/rule.md",
        "Always run the tests.\n",
        ["/opt/bricks/bricks/rule.md"],
    )
    usage = given(
        tmp_path, "gemini", "gemini/extension-and-agent.jsonl", [extension, agent, context]
    )
    assert usage == [
        record(
            "zqext", "extensions", "bricks/zqext",
            used=True, first_turn=1, calls={"mcp_zq_zq_lookup": 1}, declares=["mcp_zq_*"],
        ),
        record("reviewer", "agents", "bricks/reviewer.md", used=True, first_turn=2, calls={"reviewer": 1}),
        record("rule", "context_files", "bricks/rule.md", used=None, why=usage[2]["why"]),
    ]  # fmt: skip
    assert "nothing beyond its delivery" in usage[2]["why"]
    assert usage_metrics(usage)["bricks_used"] == {"zqext": True, "reviewer": True, "rule": None}
    never = given(tmp_path / "never", "gemini", "gemini/demo-completed.jsonl", [extension, agent])
    assert [entry["used"] for entry in never] == [False, False]


def test_a_hostile_transcript_is_read_as_data(tmp_path):
    store = tmp_path / "bricks"
    (store / ("1" * 16) / "zqskill").mkdir(parents=True)
    (store / ("1" * 16) / "zqskill" / "SKILL.md").write_text(SKILL_MD)
    transcript = tmp_path / "transcript.jsonl"
    lines = [
        "not json", "[1, 2]", json.dumps({"type": "message", "role": "assistant", "tool_calls": "x"}),
        json.dumps({"type": "message", "role": "assistant", "tool_calls": [
            "a string", {"tool": "read", "kind": "read", "input": ["not", "a", "dict"]},
            {"tool": "bash", "kind": "run", "command": "cat '" + SKILL_AT + "/SKILL.md"},  # unbalanced
            {"tool": "bash", "kind": "run", "input": {"command": 5}},
        ]}),
    ]  # fmt: skip
    transcript.write_text("\n".join(lines) + "\n")
    entry = {"kind": "skills", "rel": "bricks/zqskill", "sha256": "1" * 64, "seen_at": [SKILL_AT]}
    usage = run_brick_usage(
        {"harness": "pi", "bricks": [entry, "junk"]}, trajectory_of(transcript), store
    )
    # the unbalanced quote is split on whitespace: `'/opt/…/SKILL.md` names no file of it
    assert [(u["brick"], u["used"]) for u in usage] == [("zq-skill", False)]


@pytest.mark.parametrize(
    ("builtin", "value"),
    [
        ({"bricks_used": {"zq-skill": True}}, (True, True)),
        ({"bricks_used": {"zq-skill": None}}, (None, True)),  # its files do not tell
        ({"bricks_used": {}}, (False, True)),  # a brick of another cell: not given, not used
        ({}, (None, False)),  # measured before per-brick use was kept
    ],
)
def test_a_bricks_use_is_a_boolean_metric_of_every_run(builtin, value):
    assert builtin_value(builtin, "bricks_used.zq-skill") == value


def test_a_glob_in_a_command_reads_every_file_it_matches(tmp_path):
    lines = [
        {"type": "message", "role": "assistant", "text": "", "tool_calls": [
            {"id": "a", "tool": "bash", "kind": "run", "command": "ls /workspace"},
        ]},
        {"type": "message", "role": "assistant", "text": "", "tool_calls": [
            {"id": "b", "tool": "bash", "kind": "run", "command": f"head -n 5 {SKILL_AT}/*.md"},
        ]},
    ]  # fmt: skip
    (tmp_path / "transcript.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    frozen = tmp_path / "bricks" / ("1" * 16) / "zqskill"
    for name, text in SKILL.items():
        (frozen / name).parent.mkdir(parents=True, exist_ok=True)
        (frozen / name).write_text(text)
    entry = {"kind": "skills", "rel": "bricks/zqskill", "sha256": "1" * 64, "seen_at": [SKILL_AT]}
    usage = run_brick_usage(
        {"harness": "pi", "bricks": [entry]},
        trajectory_of(tmp_path / "transcript.jsonl"),
        tmp_path / "bricks",
    )
    assert usage == [
        skill_record(used=True, first_turn=2, calls={"bash": 1}, loaded_by="read", files_read=2)
    ]


def run_record(cell: str, used, delivered=True, turn=1) -> SimpleNamespace:
    usage = {"brick": "zq-skill", "kind": "skills", "rel": "bricks/zqskill", "used": used}
    usage |= {"first_turn": turn if used else None, "calls": {"read": 1} if used else {}}
    return SimpleNamespace(
        cell=cell,
        receipt={"bricks": {"bricks/zqskill": delivered}},
        builtin={"brick_usage": [usage]},
        provenance={"harness": "pi"},
    )


def synthesis_of(*runs) -> tuple:
    scenario = SimpleNamespace(cells=[SimpleNamespace(name=n) for n in ("bare", "few", "half")])
    return SimpleNamespace(runs=list(runs)), scenario


def test_the_synthesis_shows_delivery_beside_use_and_warns_below_half():
    result, scenario = synthesis_of(
        run_record("few", True, turn=3), *[run_record("few", False) for _ in range(2)],
        run_record("half", True, turn=2), run_record("half", False),
        run_record("half", True, delivered=False),  # not delivered: neither reached nor used
    )  # fmt: skip
    rows = brick_use_rows(result, scenario)
    assert [(r["cell"], r["delivered"], r["used"], r["first_turn"], r["calls"]) for r in rows] == [
        ("few", "3/3", "1/3", "3", "read × 1"),
        ("half", "2/3", "1/2", "2", "read × 1"),
    ]
    assert brick_use_warnings(result, scenario) == [
        "`zq-skill` reached the model in 3/3 runs of `few` and was used in 1 (built-in "
        "`bricks_used.zq-skill`): a gap of this cell measures a skill the agent mostly did not "
        "use, not what using it does"
    ]  # half of the runs it reached is not fewer than half


def test_an_unproven_delivery_or_an_unobservable_use_is_said_so():
    unproven = run_record("few", False, delivered=None)
    context = SimpleNamespace(
        cell="half", receipt={"bricks": {"bricks/rule.md": True}}, provenance={"harness": "pi"},
        builtin={"brick_usage": [{"brick": "rule", "kind": "context_files", "rel": "bricks/rule.md",
                                  "used": None, "why": "no call shows it"}]},
    )  # fmt: skip
    result, scenario = synthesis_of(unproven, context)
    rows = brick_use_rows(result, scenario)
    assert [(r["delivered"], r["used"]) for r in rows] == [
        ("1/1 given (cannot be proven on pi)", "0/1"),
        ("1/1", "not observable"),
    ]
    warnings = brick_use_warnings(result, scenario)
    assert len(warnings) == 1 and warnings[0].startswith(
        "`zq-skill` was given to the agent (its delivery cannot be proven on pi) in 1/1 runs of "
        "`few` and was used in 0"
    )


def test_load_skill_is_each_harness_own_way_as_its_listing_gives_it():
    from agentab.offline_model.policy import Conversation
    from agentab.offline_model.toolsets import tool_call

    listings = {  # as each harness listed the skill to the offline model (measured)
        "pi": (
            {"read": {}, "bash": {}},
            "<skill>\n    <name>zq-skill</name>\n    <description>Use when.</description>\n"
            f"    <location>{SKILL_AT}/SKILL.md</location>\n  </skill>",
        ),
        "claude-code": (
            {"Read": {}, "Skill": {}},
            "The following skills are available for use with the Skill tool:\n\n"
            "- agentab-bricks:zqskill (agentab-bricks:zq-skill): Use when.\n- dataviz: Charts.",
        ),
        "codex": (
            {"exec_command": {}},
            "### Skill roots\n- `r0` = `/agent/codex-home/skills`\n### Available skills\n"
            "- zq-skill: Use when. (file: r0/zqskill/SKILL.md)\n",
        ),
    }
    calls = {
        harness: tool_call(
            "load_skill", {"skill": "zq-skill"}, Conversation(system, "", tools, harness=harness)
        )
        for harness, (tools, system) in listings.items()
    }
    assert calls == {
        "pi": ("read", {"path": f"{SKILL_AT}/SKILL.md"}),
        "claude-code": ("Skill", {"skill": "agentab-bricks:zqskill"}),
        "codex": ("exec_command", {"cmd": "cat /agent/codex-home/skills/zqskill/SKILL.md"}),
    }
    for harness, (tools, system) in listings.items():  # a cell without the skill skips it
        conversation = Conversation(system, "", tools, harness=harness)
        assert tool_call("load_skill", {"skill": "dataviz2"}, conversation) is None


@pytest.mark.parametrize(
    ("metric", "skills", "problem"),
    [
        ("bricks_used.zq-skill", ["zqskill"], None),
        ("bricks_used.zq-skil", ["zqskill"], "`bricks_used.zq-skil` names no brick of this"),
        ("bricks_used.run-tests", ["zqskill"], "the use of `run-tests` cannot be observed"),
        ("bricks_used.zq-skill", ["zqskill", "zqskill2"], "has two bricks named `zq-skill`"),
    ],
)
def test_the_contract_names_a_bricks_use_by_its_name(tmp_path, metric, skills, problem):
    from agentab.errors import ScenarioError
    from agentab.scenario import load_scenario

    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder)
    for skill_folder in skills:  # each SKILL.md says `name: zq-skill`
        (folder / "bricks" / skill_folder).mkdir()
        (folder / "bricks" / skill_folder / "SKILL.md").write_text(SKILL_MD)
    text = (folder / "scenario.toml").read_text()
    text = text.replace(
        'context_files = ["bricks/run-tests.md"]',
        'context_files = ["bricks/run-tests.md"]\n'
        f"skills = {json.dumps([f'bricks/{name}' for name in skills])}",
    )
    text = text.replace('metrics = ["tests_pass"', f'metrics = ["{metric}", "tests_pass"')
    (folder / "scenario.toml").write_text(text)
    if problem is None:
        assert metric in load_scenario(folder / "scenario.toml", check_etalon=False).metrics
        return
    with pytest.raises(ScenarioError) as refused:
        load_scenario(folder / "scenario.toml", check_etalon=False)
    rendered = refused.value.render()
    assert problem in rendered and "validation.metrics" in rendered and "fix: " in rendered


def test_agentab_runs_filters_on_a_bricks_use_outside_the_contract():
    from agentab.report.metric_filter import parse_metric_filter

    def run(used: dict) -> SimpleNamespace:
        return SimpleNamespace(
            status="valid", pending=[], metrics={}, extra={}, builtin={"bricks_used": used}
        )

    unused = parse_metric_filter("bricks_used.zq-skill=false")
    assert unused.matches(run({"zq-skill": False}))
    assert not unused.matches(run({"zq-skill": True}))
    assert not unused.matches(run({}))  # a run without the brick says nothing of its use
