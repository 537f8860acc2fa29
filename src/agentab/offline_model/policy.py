"""Seeded policies: what the offline model answers, declared in TOML.

A policy file (`policies/<name>.toml`, or any path) has these tables, all optional except
`[policy]`:

```toml
[policy]
description = "one line on what the policy is for"
fail_status = 400          # answer every agent request with this HTTP error instead
fail_message = "..."       #   (a provider error as pi sees one); 0 or absent: no error
fail_first = 0             # only the first N requests fail (to exercise retries)
hang = false               # never answer (the harness's timeout must end the run)
price = { input = 3.0, output = 15.0 }  # USD per million tokens: the offline model then costs
                           #   what a real one would (a budget tested offline); absent: nothing

[[steps]]                  # the agent's turns, in order; one step = one assistant reply
id = "read"                # names the step's random draw, so a draw never depends on another
say = "Let me read calc.py."
action = "read"            # harness-neutral: read (path), edit (path, old, new), write (path,
path = "calc.py"           #   content), run (command), load_skill (skill: its name, as a
                           #   model loads a listed skill); mapped onto the tools offered
chance = 1.0               # probability that the step happens (default 1)
otherwise = { action = "edit", path = "calc.py", old = "a", new = "b" }  # instead, when it does not

[[steps]]                  # or a tool named directly, for a test of one harness:
tool = "brick_probe"       #   a step whose tool is not offered is skipped
input = { note = "hello" }

[[steps.when]]             # conditions that change the chance; the first one that holds wins
system_contains = "always run the test suite"
chance = 0.9

[final]
text = "What the last assistant message says."
thinking = "A short reasoning text, sent only when the request asks for thinking."

[judge]                    # answers to a forced tool call (a judge's verdict)
default_chance = 0.5       # booleans with no rule
[judge.properties.on_task]
chance = 0.9               # true with this probability
[judge.properties.ran_tests]
prompt_contains = "python3 -m unittest"  # true when the prompt contains this string
```

Every draw is `random.Random(f"{seed}:{name}")`: the same seed and the same request give the
same answer, whatever order requests arrive in, and a retried request gets the same answer.
The plan of a conversation (which steps happen) is decided from the seed and the system
prompt; the reply to a request is the plan's step whose index is the number of assistant
messages the request already holds, then the final message.
"""

from __future__ import annotations

import random
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from agentab.errors import AgentabError, problem
from agentab.prices import Price


@dataclass(frozen=True)
class ToolCall:
    name: str
    input: dict
    id: str


@dataclass(frozen=True)
class Reply:
    """One assistant message, independent of the wire format it is sent in."""

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class Conversation:
    """What a request says, reduced to what a policy may react to."""

    system: str
    prompt: str
    tools: dict[str, dict] = field(default_factory=dict)  # name -> JSON schema of its input
    assistant_turns: int = 0
    thinking: str | None = None  # the level as sent, None when the request asks for none
    forced_tool: str | None = None
    # What the tools returned so far, oldest first: a toolset whose edit tool needs whole lines
    # (Codex's patch format) finds them in the file as the agent read it.
    tool_outputs: tuple[str, ...] = ()
    # The harness the server answers (`claude-code`): its toolset turns an action into a call.
    harness: str | None = None


class Policy:
    def __init__(self, name: str, data: dict, source: Path | str):
        self.name = name
        self.source = str(source)
        self.data = data
        self.settings = data.get("policy", {})
        self.steps = data.get("steps", [])
        self.final = data.get("final", {})
        self.judge = data.get("judge", {})

    @property
    def price(self) -> Price | None:
        """What the policy says its model's tokens cost; None: the offline model costs nothing."""
        price = self.settings.get("price")
        if not price:
            return None
        return Price(float(price["input"]), float(price["output"]), f"policy {self.name}")

    @property
    def hang(self) -> bool:
        return bool(self.settings.get("hang", False))

    def failure_for(self, request_number: int) -> tuple[int, str] | None:
        """The HTTP error to answer the n-th request (1-based) with, if the policy fails it."""
        status = int(self.settings.get("fail_status", 0))
        if not status:
            return None
        first = int(self.settings.get("fail_first", 0))
        if first and request_number > first:
            return None
        return status, str(self.settings.get("fail_message", "offline model: simulated error"))

    def reply(self, conversation: Conversation, seed: int) -> Reply:
        if conversation.forced_tool:
            return self._judge_reply(conversation, seed)
        plan = self.plan(conversation, seed)
        turn = conversation.assistant_turns
        if turn < len(plan):
            return plan[turn]
        thinking = self.final.get("thinking", "") if conversation.thinking else ""
        return Reply(text=self.final.get("text", "Done."), thinking=thinking)

    def plan(self, conversation: Conversation, seed: int) -> list[Reply]:
        plan = []
        for index, step in enumerate(self.steps):
            step_id = step.get("id", f"step{index}")
            happens = draw(seed, step_id) < self._chance(step, conversation)
            chosen = step if happens else step.get("otherwise")
            found = step_call(chosen, conversation) if chosen else None
            if found is None:
                continue
            call = ToolCall(name=found[0], input=found[1], id=f"call_{step_id}")
            plan.append(Reply(text=chosen.get("say", step.get("say", "")), tool_calls=(call,)))
        return plan

    @staticmethod
    def _chance(step: dict, conversation: Conversation) -> float:
        for condition in step.get("when", []):
            if condition_holds(condition, conversation):
                return float(condition.get("chance", 1.0))
        return float(step.get("chance", 1.0))

    def _judge_reply(self, conversation: Conversation, seed: int) -> Reply:
        schema = conversation.tools.get(conversation.forced_tool, {})
        verdict = self._fill_object(schema, conversation, seed, prefix="judge")
        call = ToolCall(name=conversation.forced_tool, input=verdict, id="call_verdict")
        return Reply(tool_calls=(call,))

    def _fill_object(self, schema: dict, conversation: Conversation, seed: int, prefix: str):
        rules = self.judge.get("properties", {})
        verdict = {}
        for name, prop in schema.get("properties", {}).items():
            rule = rules.get(name, {})
            verdict[name] = self._fill_value(prop, rule, conversation, seed, f"{prefix}:{name}")
        return verdict

    def _fill_value(self, prop: dict, rule: dict, conversation: Conversation, seed: int, key):
        if "value" in rule:
            return rule["value"]
        kind = prop.get("type")
        if "enum" in prop:
            return prop["enum"][0]
        if kind == "boolean":
            if "prompt_contains" in rule:
                return rule["prompt_contains"] in conversation.prompt
            chance = rule.get("chance", self.judge.get("default_chance", 0.5))
            return draw(seed, key) < float(chance)
        if kind in ("integer", "number"):
            return prop.get("minimum", 0)
        if kind == "array":
            return []
        if kind == "object":
            return self._fill_object(prop, conversation, seed, key)
        return rule.get("text", "offline model verdict")


ACTION_ARGUMENTS = {"read": ("path",), "edit": ("path", "old", "new"), "write": ("path", "content")}
ACTION_ARGUMENTS["run"] = ("command",)
ACTION_ARGUMENTS["load_skill"] = ("skill",)


def step_call(step: dict, conversation: Conversation) -> tuple[str, dict] | None:
    """(tool, input) of a step: a named tool if offered, else its action on the offered tools."""
    if "tool" in step:
        return (
            (step["tool"], dict(step.get("input", {})))
            if step["tool"] in conversation.tools
            else None
        )
    if "action" in step:
        from agentab.offline_model.toolsets import tool_call

        args = {key: step[key] for key in ACTION_ARGUMENTS.get(step["action"], ()) if key in step}
        return tool_call(step["action"], args, conversation)
    return None


def condition_holds(condition: dict, conversation: Conversation) -> bool:
    checks = {
        "system_contains": lambda text: text in conversation.system,
        "prompt_contains": lambda text: text in conversation.prompt,
        "thinking": lambda level: (conversation.thinking or "off") == level,
    }
    return all(check(condition[key]) for key, check in checks.items() if key in condition)


def draw(seed: int, name: str) -> float:
    """A uniform draw in [0, 1) named by the seed and the decision it makes."""
    return random.Random(f"{seed}:{name}").random()


def shipped_policy_names() -> list[str]:
    folder = resources.files("agentab.offline_model") / "policies"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def load_policy(name_or_path: str) -> Policy:
    """A shipped policy by name (`demo`), or a policy file by path."""
    if name_or_path.endswith(".toml"):
        path = Path(name_or_path)
        if not path.is_file():
            raise AgentabError(
                problem(path, "", "no such policy file", "give the path of a policy TOML file")
            )
        return Policy(path.stem, parse(policy_text(path), path), path)
    resource = resources.files("agentab.offline_model") / "policies" / f"{name_or_path}.toml"
    if not resource.is_file():
        known = ", ".join(shipped_policy_names())
        raise AgentabError(
            problem(
                "scenario",
                "agent.model",
                f"the offline model has no policy named {name_or_path!r}",
                f"use one of: {known}",
            )
        )
    return Policy(name_or_path, parse(resource.read_text(), resource), str(resource))


def policy_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise AgentabError(
            problem(path, "", f"is not UTF-8 text ({error.reason})", "save it as UTF-8 text")
        ) from None


def parse(text: str, source) -> dict:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as error:
        where = re.search(r"line (\d+)", str(error))
        raise AgentabError(
            problem(
                source,
                "",
                f"not valid TOML: {error or 'nested too deeply'}",
                "fix the syntax at that line (strings need quotes, tables [like.this])",
                int(where.group(1)) if where else None,
            )
        ) from None
    if not isinstance(data.get("policy"), dict):
        raise AgentabError(problem(source, "policy", "missing [policy] table", "add [policy]"))
    if (found := price_problem(data["policy"].get("price"))) is not None:
        raise AgentabError(problem(source, "policy.price", *found))
    steps = data.get("steps", [])
    if not isinstance(steps, list):
        raise AgentabError(
            problem(source, "steps", "is not a list", "write each step as [[steps]]")
        )
    for number, step in enumerate(steps, start=1):
        for key, found in step_problems(step, f"steps[{number}]"):
            raise AgentabError(problem(source, key, *found))
    return data


def price_problem(price) -> tuple[str, str] | None:
    """(message, fix) when `[policy] price` is not two non-negative numbers."""
    if price is None:
        return None
    numbers = isinstance(price, dict) and all(
        isinstance(price.get(key), int | float)
        and not isinstance(price.get(key), bool)
        and price[key] >= 0
        for key in ("input", "output")
    )
    if numbers and set(price) == {"input", "output"}:
        return None
    return (
        f"is {price!r}: a price is USD per million tokens, input and output",
        "write price = { input = 3.0, output = 15.0 }",
    )


def step_problems(step, key: str):
    """(key, (message, fix)) for what a step cannot do: a step the offline model would skip
    without a word measures a conversation the policy's author never wrote."""
    if not isinstance(step, dict):
        yield key, ("a step is a table", "write it as [[steps]] with an action or a tool")
        return
    if ("action" in step) == ("tool" in step):
        yield (
            key,
            (
                "a step names either an action or a tool, and this one names "
                + ("both" if "action" in step else "neither"),
                f'add action = one of {", ".join(ACTION_ARGUMENTS)}, or tool = "<a tool name>"',
            ),
        )
    elif "action" in step and step["action"] not in ACTION_ARGUMENTS:
        yield (
            f"{key}.action",
            (
                f"unknown action {step['action']!r}: the offline model would skip the step",
                f"use one of: {', '.join(ACTION_ARGUMENTS)}",
            ),
        )
    elif "action" in step:
        missing = [arg for arg in ACTION_ARGUMENTS[step["action"]] if arg not in step]
        if missing:
            yield (
                f"{key}.action",
                (
                    f"action {step['action']!r} needs {', '.join(missing)}",
                    f"add {' and '.join(f'{arg} = ...' for arg in missing)} to the step",
                ),
            )
    if "otherwise" in step:
        yield from step_problems(step["otherwise"], f"{key}.otherwise")
