"""What a mining writes: the tasks, as a scenario agentab runs as it stands, and why every other
commit was dropped.

    <out>/scenario.toml      the mined tasks, a tests validator, two offline policies as cells
    <out>/tasks.toml         the same [tasks.*] and validator, to paste into a scenario of yours
    <out>/mined.bundle       the tags the tasks start from, and their past: nothing after
    <out>/prompts/<task>.md  the commit's message (or the linked issue's text)
    <out>/hidden/<task>/     the commit's tests, at their paths: the validator's alone
    <out>/policies/          fix.toml (applies each commit's fix), nofix.toml (changes nothing)
    <out>/mined.json         the funnel, and each commit's fate with its reason

The two policies are the mined tasks' own control: the offline model applying each commit's fix
must come out established against the one that changes nothing, or a task is not measuring
what it says.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.mining.decide import Decision
from agentab.mining.history import Commit, is_test
from agentab.mining.workspace import BUNDLE, MiningRepo

DEFAULT_AGENT = {"harness": "pi", "version": "1.6.0", "thinking": "off", "timeout": "3m"}
DEFAULT_LIMITS = {"memory": "4G", "processes": 512, "disk": "2G", "patch": "5M"}
MIN_RUNS_PER_CELL = 10
ISSUE_REFERENCE = re.compile(r"(?:^|[^\w&])#(\d+)\b")


@dataclass(frozen=True)
class Mined:
    """A kept task: its name, commit, tag and what its validator expects."""

    name: str
    commit: Commit
    tag: str
    decision: Decision
    prompt: str


def prompt_for(commit: Commit, issues: dict[str, str]) -> str:
    """The task as a person would be handed it: the text of the issue the commit names, when
    the user gave it, else the commit's message."""
    for number in ISSUE_REFERENCE.findall(commit.message):
        if number in issues:
            return issues[number].strip() + "\n"
    return commit.message


def toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def toml_list(items: list[str], indent: str = "    ") -> str:
    if not items:
        return "[]"
    return "[\n" + "".join(f"{indent}{toml_string(item)},\n" for item in items) + "]"


def task_block(task: Mined) -> str:
    return (
        f"# {task.commit.sha[:12]} {task.commit.subject}\n"
        f"[tasks.{task.name}]\n"
        f'prompt_file = "prompts/{task.name}.md"\n'
        f"tag = {toml_string(task.tag)}\n"
        f'hidden_tests = "hidden/{task.name}"\n'
        f"fail_to_pass = {toml_list(task.decision.fail_to_pass)}\n"
        f"pass_to_pass = {toml_list(task.decision.pass_to_pass)}\n"
    )


def validator_block(runner: str) -> str:
    return (
        "# agentab's own test validator: each task's fail_to_pass and pass_to_pass, run on the\n"
        "# run's result with the task's hidden tests laid in (docs/validators.md).\n"
        "[validators.tests]\n"
        'mode = "tests"\n'
        f"runner = {toml_string(runner)}\n"
        'metric = "resolved"\n'
    )


def tasks_text(tasks: list[Mined], runner: str) -> str:
    return "\n".join([validator_block(runner), *(task_block(task) for task in tasks)])


def etalon_block(tag: str, etalon) -> str:
    lines = ["[etalon]", f'repo = "{BUNDLE}"', f"tag = {toml_string(tag)}"]
    if etalon is not None and etalon.setup:
        lines.append(f"setup = {toml_list(list(etalon.setup))}")
        if etalon.path:
            lines.append(f"path = {toml_list(list(etalon.path))}")
        lines.append(f'setup_timeout = "{etalon.setup_timeout_s:g}s"')
    return "\n".join(lines) + "\n"


def repetitions_for(tasks: int) -> int:
    """Enough runs per cell for a gap to be established (docs/synthesis.md: 10 runs per cell
    leave room for an invalid one), and at least 3 per task for pass^k."""
    return max(3, -(-MIN_RUNS_PER_CELL // tasks))


def validation_block(protect) -> str:
    lines = ["[validation]", 'metrics = ["resolved", "fail_to_pass", "pass_to_pass", "turns"]']
    if protect is not None:
        lines.append(f"protect = {toml_list(list(protect))}")
    return "\n".join(lines) + "\n"


def limits_inline(limits) -> str:
    """`[protocol] limits` as the environment's scenario declared them, else what a mined task
    of a small project needs."""
    table = limits.as_dict() if limits is not None else DEFAULT_LIMITS
    return "{ " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in table.items()) + " }"


def scenario_text(name: str, source: str, tasks: list[Mined], settings) -> str:
    agent = DEFAULT_AGENT
    return f"""# Tasks mined from {source} by `agentab tasks mine` (mined.json says why every other
# commit was dropped). The cells are the tasks' control: the offline model applying each
# commit's fix (fix) against one that changes nothing (nofix). For your own question, set the
# agent, the axes and the deltas, and keep the tasks, the etalon and the validator.

[scenario]
name = {toml_string(name)}
question = "Does the agent fix the bugs this repository's history fixed?"

{etalon_block(tasks[0].tag, settings.etalon)}
[agent]
harness = "{agent["harness"]}"
version = "{agent["version"]}"
provider = "offline"
model = "policies/nofix.toml"
thinking = "{agent["thinking"]}"
timeout = "{agent["timeout"]}"

[protocol]
repetitions = {repetitions_for(len(tasks))}
limits = {limits_inline(settings.limits)}

[axes]
policy = ["nofix", "fix"]

[deltas.policy.fix]
model = "policies/fix.toml"

{validation_block(settings.protect)}
{tasks_text(tasks, settings.runner)}"""


def prompt_markers(tasks: list[Mined]) -> list[str]:
    """What tells each task's prompt from the others': its first line, or the whole prompt
    where two tasks share a first line."""
    firsts = [task.prompt.strip().splitlines()[0] for task in tasks]
    return [
        first if firsts.count(first) == 1 else task.prompt.strip()
        for task, first in zip(tasks, firsts, strict=True)
    ]


def fix_policy(tasks: list[Mined], repo: MiningRepo) -> str:
    """An offline policy that makes each task's commit's change to its code, and nothing
    else: for the task whose prompt it is handed (a step happens only on its own task)."""
    lines = [
        "# Applies each mined commit's fix: the positive control of the mined tasks.",
        "[policy]",
        'description = "Writes each task\'s files as its commit left them."',
        "",
    ]
    for task, marker in zip(tasks, prompt_markers(tasks), strict=True):
        marker = toml_string(marker)
        for index, (status, path) in enumerate(task.commit.changed):
            if is_test(path):
                continue
            if status == "D":
                action = f'action = "run"\ncommand = {toml_string(f"rm -f -- {shlex.quote(path)}")}'
            else:
                content = repo.file_at(task.commit.sha, path).decode("utf-8", "replace")
                action = f'action = "write"\npath = {toml_string(path)}\ncontent = {toml_string(content)}'
            lines += [
                "[[steps]]",
                f'id = "{task.name}-{index}"',
                f"say = {toml_string(f'Changing {path}.')}",
                action,
                "chance = 0.0",
                "[[steps.when]]",
                f"prompt_contains = {marker}",
                "chance = 1.0",
                "",
            ]
    lines += ["[final]", 'text = "I changed the code as the task asks."', ""]
    return "\n".join(lines)


NOFIX_POLICY = """# Changes nothing: the negative control of the mined tasks.
[policy]
description = "Reads the repository's top folder and stops."

[[steps]]
id = "look"
say = "Let me look around."
action = "run"
command = "ls"

[final]
text = "I looked, and changed nothing."
"""


def write_tasks(out: Path, name: str, source: str, tasks: list[Mined], settings) -> None:
    """The scenario, the paste-able tasks, the prompts and the policies (hidden tests and the
    bundle are written as the candidates are tried)."""
    (out / "prompts").mkdir(parents=True, exist_ok=True)
    for task in tasks:
        (out / "prompts" / f"{task.name}.md").write_text(task.prompt, encoding="utf-8")
    (out / "scenario.toml").write_text(
        scenario_text(name, source, tasks, settings), encoding="utf-8"
    )
    (out / "tasks.toml").write_text(tasks_text(tasks, settings.runner), encoding="utf-8")
    (out / "policies").mkdir(exist_ok=True)
    (out / "policies" / "fix.toml").write_text(fix_policy(tasks, MiningRepo(out)), "utf-8")
    (out / "policies" / "nofix.toml").write_text(NOFIX_POLICY, encoding="utf-8")


WRITTEN = ("scenario.toml", "tasks.toml", "mined.json", "mined.bundle", "prompts", "hidden",
           "policies", ".mining")  # fmt: skip


def clear_earlier_mining(out: Path) -> None:
    """Make `out` ready for a new mining: the files an earlier one wrote there are removed (a
    dropped task's hidden tests must not outlive it); a folder of anything else is refused."""
    if not out.exists() or not any(out.iterdir()):
        return
    if not (out / "mined.json").is_file() and not (out / ".mining").is_dir():
        raise AgentabError(
            problem(
                out,
                "--out",
                "is a folder that holds other files than a mining's",
                "give --out a new folder, or the folder of an earlier mining",
            )  # fmt: skip
        )
    for name in WRITTEN:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def write_record(out: Path, record: dict) -> None:
    (out / "mined.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
