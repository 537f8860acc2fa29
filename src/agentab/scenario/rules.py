"""The load-time rules of a scenario beyond its schema (docs/scenario.md, "The rules, and
why"), each a function that adds
the problems it finds to the collector: every problem names the file, the key and the fix.

The rule at the heart of it: a cell that declares no change from the baseline is a
silent duplicate of it, published twice under two names. So a non-first axis value must
declare a delta, that delta must change something, and no two cells may have the same
effective configuration, whichever way they were declared.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from agentab.confinement.limits import LIMITS_FIX, size_problem
from agentab.etalon.protect import glob_problem
from agentab.scenario.bricks import (
    KIND_WORDS,
    brick_shape_problem,
    content_sha256,
    inside,
    resolved,
)
from agentab.scenario.cells import BRICK_KINDS, TASK_KEYS, CellDraft, slugify
from agentab.scenario.durations import DURATION_FIX, duration_problem
from agentab.scenario.source import Collector, quote_key, suggest
from agentab.scenario.texts import check_brick_text, check_prompt_text, read_text
from agentab.scenario.types import AgentConfig, Brick, Cell
from agentab.trajectory import pattern_problem

AGENT_SCALARS = ("thinking", "model", "provider", "harness", "version")
# Past this many jobs, Snakemake's scheduling and DAG building take minutes (docs/performance.md).
COMFORTABLE_JOBS = 20_000
# Linux refuses one command-line argument longer than this (MAX_ARG_STRLEN).
LONGEST_ARGUMENT = 128 * 1024


def variants_as_lists(raw: dict) -> dict[str, dict[str, list[str]]]:
    return {
        name: {
            dim: ([values] if isinstance(values, str) else list(values))
            for dim, values in choice.items()
        }
        for name, choice in raw.items()
    }


# ---------------------------------------------------------------------------- the matrix


def check_matrix(data: dict, sink: Collector) -> None:
    axes = data.get("axes", {})
    deltas = data.get("deltas", {})
    variants = variants_as_lists(data.get("variants", {}))
    used: set[tuple[str, str]] = set()
    for dimension, values in axes.items():
        baseline = values[0]
        if baseline in deltas.get(dimension, {}):
            sink.add(
                f"deltas.{dimension}.{baseline}",
                f"`{baseline}` is the baseline of axis `{dimension}` (its first value) and may "
                "not declare a delta",
                f"remove [deltas.{dimension}.{quote_key(baseline)}], or put another value first "
                f"in axes.{dimension}",
            )
        for value in values[1:]:
            used.add((dimension, value))
            if value not in deltas.get(dimension, {}):
                sink.add(
                    f"axes.{dimension}",
                    f"axis value `{value}` of `{dimension}` declares no delta: it would be a "
                    "silent duplicate of the baseline",
                    f"add [deltas.{dimension}.{quote_key(value)}], or fix the spelling of the value"
                    + suggest(value, list(deltas.get(dimension, {}))),
                )
    for name, choice in variants.items():
        for dimension, values in choice.items():
            for value in values:
                if dimension in axes and value == axes[dimension][0]:
                    continue
                used.add((dimension, value))
                if value not in deltas.get(dimension, {}):
                    sink.add(
                        f"variants.{name}.{dimension}",
                        f"variant `{name}` names `{dimension} = {value}`, which has no delta",
                        f"declare [deltas.{dimension}.{quote_key(value)}], or use one of the "
                        "declared values" + suggest(value, list(deltas.get(dimension, {}))),
                    )
    for dimension, values in deltas.items():
        for value, delta in values.items():
            if not delta:
                sink.add(
                    f"deltas.{dimension}.{value}",
                    f"delta `{dimension}.{value}` sets nothing: its cells would be silent "
                    "duplicates of the baseline",
                    "give it what the value changes (context_files = [...], thinking = ..., …)",
                )
            if (dimension, value) not in used and not (
                dimension in axes and value == axes[dimension][0]
            ):
                sink.add(
                    f"deltas.{dimension}.{value}",
                    f"delta `{dimension}.{value}` is used by no axis and no variant (a "
                    "misspelling?)",
                    f"add `{value}` to axes.{dimension} or to a variant, or remove the delta"
                    + suggest(value, axes.get(dimension, [])),
                )


def check_no_op_settings(data: dict, base_agent: AgentConfig, sink: Collector) -> None:
    """A delta that sets an agent scalar to the baseline's own value changes nothing."""
    for dimension, values in data.get("deltas", {}).items():
        for value, delta in values.items():
            for key in AGENT_SCALARS:
                if key in delta and delta[key] == getattr(base_agent, key):
                    sink.add(
                        f"deltas.{dimension}.{value}.{key}",
                        f"delta `{dimension}.{value}` sets {key} = {delta[key]!r}, which the "
                        f"baseline already has ([agent].{key}): it changes nothing",
                        f"set another {key}, or fix [agent].{key}",
                    )
            if "harness" in delta and "version" not in delta:
                sink.add(
                    f"deltas.{dimension}.{value}.version",
                    f"delta `{dimension}.{value}` changes the harness but not its version: "
                    f"{base_agent.version!r} is the baseline harness's version",
                    f'add version = "<the exact version of {delta["harness"]}>" to the delta',
                )


# ---------------------------------------------------------------------------- cells


def resolve_relative(base: Path, rel: str, key: str, sink: Collector, check: bool) -> Path | None:
    if not check:
        return base / rel
    path = resolved(base / rel)
    if path is None:
        sink.add(
            key,
            f"`{rel}` is a link that leads nowhere (a loop of links, or one link too many)",
            "point the link at a real file inside the scenario's folder, or copy the file there",
        )
        return None
    if not inside(path, base):
        sink.add(
            key,
            f"`{rel}` escapes the scenario's folder",
            "keep every file the scenario uses inside its folder (a link that leads out counts "
            "as escaping), so the scenario stays self-contained",
        )
        return None
    if not path.exists():
        sink.add(
            key,
            f"`{rel}` does not exist (looked for {path})",
            "fix the path; it is relative to the scenario file",
        )
        return None
    return path


def resolve_file(base: Path, rel: str, key: str, sink: Collector) -> Path | None:
    """A file the scenario names, which must be a regular file (not a folder)."""
    path = resolve_relative(base, rel, key, sink, True)
    if path is not None and not path.is_file():
        sink.add(key, f"`{rel}` is a folder, not a file", "name the file itself")
        return None
    return path


def task_prompt(owner: dict, base: Path, key: str, sink: Collector, check: bool) -> str | None:
    if "prompt" in owner and "prompt_file" in owner:
        sink.add(key, "both `prompt` and `prompt_file` are set", "keep one of them")
        return None
    if "prompt" in owner:
        check_prompt_text(owner["prompt"], None, f"{key}.prompt", sink)
        return owner["prompt"]
    if "prompt_file" in owner:
        rel = owner["prompt_file"]
        path = resolve_file(base, rel, f"{key}.prompt_file", sink) if check else base / rel
        if path is None or not path.is_file():
            return None if check else ""
        text = read_text(path, rel, f"{key}.prompt_file", sink)
        if text is not None:
            check_prompt_text(text, rel, f"{key}.prompt_file", sink)
        return text
    return None


def _owner(draft: CellDraft, deltas: dict, kind: str, rel: str) -> str:
    """The delta key that declares this brick, for the error message."""
    for dimension, joined in draft.delta.items():
        for value in joined.split("+"):
            if rel in deltas.get(dimension, {}).get(value, {}).get(kind, []):
                return f"deltas.{dimension}.{quote_key(value)}"
    return f"cell `{draft.name}`"


def build_cell(
    draft: CellDraft,
    deltas: dict,
    base_agent: AgentConfig,
    base_prompt: str,
    sc_dir: Path,
    sink: Collector,
    check: bool,
) -> Cell:
    for conflict in draft.conflicts:
        sink.add(
            "variants." + draft.name if draft.is_variant else "deltas",
            f"cell `{draft.name}`: {conflict}",
            "let one delta of a cell set each scalar; split the cell or merge the deltas",
        )
    agent = replace(
        base_agent, **{k: draft.settings[k] for k in AGENT_SCALARS if k in draft.settings}
    )
    prompt = base_prompt
    if any(k in draft.settings for k in TASK_KEYS):
        prompt = task_prompt(draft.settings, sc_dir, f"cell `{draft.name}` task", sink, check)
    bricks = []
    for kind in BRICK_KINDS:
        for rel in draft.settings.get(kind, []):
            key = f"{_owner(draft, deltas, kind, rel)}.{kind}"
            path = resolve_relative(sc_dir, rel, key, sink, check)
            if path is None:
                continue
            shape = brick_shape_problem(kind, path, sc_dir) if check else None
            if shape:
                sink.add(key, f"`{rel}`: {shape}", f"pass a real {KIND_WORDS[kind]}")
                continue
            if check:
                check_brick_text(kind, path, rel, key, sink)
            sha = content_sha256(path) if check else ""
            bricks.append(Brick(kind=kind, rel=rel, path=path, sha256=sha))
    return Cell(
        name=draft.name,
        slug=slugify(draft.name),
        is_baseline=draft.is_baseline,
        is_variant=draft.is_variant,
        delta=dict(draft.delta),
        settings=draft.settings,
        agent=agent,
        prompt=prompt or "",
        bricks=bricks,
    )


def cell_key(cell: Cell) -> str:
    return f"variants.{quote_key(cell.name)}" if cell.is_variant else "axes"


def check_cell_names(cells: list[Cell], sink: Collector) -> None:
    seen_names: set[str] = set()
    seen_slugs: dict[str, str] = {}
    for cell in cells:
        if not cell.slug:
            sink.add(
                cell_key(cell),
                f"cell name `{cell.name}` has no letter or digit, so it has no results folder",
                "rename it",
            )
        if cell.name in seen_names:
            sink.add(cell_key(cell), f"two cells are named `{cell.name}`", "rename the variant")
        elif cell.slug in seen_slugs:
            sink.add(
                cell_key(cell),
                f"cells `{seen_slugs[cell.slug]}` and `{cell.name}` share the results folder "
                f"runs/{cell.slug}/",
                "rename one of them so that their slugs differ",
            )
        seen_names.add(cell.name)
        seen_slugs.setdefault(cell.slug, cell.name)


def effective_configuration(cell: Cell) -> str:
    """What decides a cell's runs, bricks by content: two cells alike here measure the same."""
    config = cell.run_config()
    config["bricks"] = [(brick.kind, brick.sha256) for brick in cell.bricks]
    return json.dumps(config, sort_keys=True)


def check_duplicate_cells(cells: list[Cell], sink: Collector) -> None:
    """Two cells with the same effective configuration are never both run."""
    first: dict[str, Cell] = {}
    for cell in cells:
        twin = first.setdefault(effective_configuration(cell), cell)
        if twin is cell:
            continue
        if cell.is_variant and not cell.delta:
            message = f"variant `{cell.name}` names only baseline values: it is the baseline cell"
        else:
            message = (
                f"cells `{twin.name}` and `{cell.name}` have the same effective configuration "
                "(every setting, every brick by content): one of them is a silent duplicate"
            )
        sink.add(
            cell_key(cell),
            message,
            f"remove `{cell.name}`, or give it a delta that changes what `{twin.name}` runs",
        )


def check_harness_support(cells: list[Cell], sink: Collector) -> None:
    """Each cell's harness can take what the cell asks of it by explicit path, never by its own
    discovery: a brick it cannot be handed is refused (docs/harnesses.md)."""
    from agentab.harnesses import adapter_class, harness_names

    known = harness_names()
    for cell in cells:
        if cell.agent.harness not in known:
            sink.add(
                "agent.harness",
                f"no harness named `{cell.agent.harness}`",
                f"use one of: {', '.join(known)}" + suggest(cell.agent.harness, known),
            )
            continue
        harness = adapter_class(cell.agent.harness)
        if cell.agent.thinking not in harness.thinking_levels:
            sink.add(
                "agent.thinking",
                f"cell `{cell.name}`: {harness.name} has no thinking level {cell.agent.thinking!r}",
                f"use one of: {', '.join(harness.thinking_levels)}",
            )
        for brick in cell.bricks:
            if brick.kind in harness.refused_bricks:
                sink.add(
                    f"{cell_key(cell)}.{brick.kind}",
                    f"cell `{cell.name}`: {harness.name} cannot take the {KIND_WORDS[brick.kind]} "
                    f"`{brick.rel}` by explicit path: {harness.refused_bricks[brick.kind]}",
                    "remove it from this cell, or measure it on a harness that takes it",
                )
        if harness.prompt_in_argv and len(cell.prompt.encode()) > LONGEST_ARGUMENT - 1024:
            sink.add(
                "task",
                f"cell `{cell.name}`: the task is {len(cell.prompt.encode()) // 1024} KiB; "
                f"{harness.name} takes it as one command-line argument, which Linux limits "
                f"to {LONGEST_ARGUMENT // 1024} KiB, so every run would fail the same way",
                "shorten the task, and put long material in the etalon for the agent to read",
            )


def check_offline_policies(data: dict, cells: list[Cell], sc_dir: Path, sink: Collector) -> None:
    """The offline model's policy is its model name: a misspelt one would fail every run. A
    policy file is named relative to the scenario, and checked like a brick."""
    from agentab.offline_model.policy import shipped_policy_names

    known = shipped_policy_names()
    wanted = {("agent.model", c.agent.model) for c in cells if c.agent.provider == "offline"}
    for name, spec in data.get("validators", {}).items():
        if spec.get("mode") == "judge" and str(spec.get("model", "")).startswith("offline:"):
            wanted.add((f"validators.{name}.model", spec["model"].removeprefix("offline:")))
    for key, policy in sorted(wanted):
        if policy.endswith(".toml"):
            path = resolve_relative(sc_dir, policy, key, sink, True)
            if path is not None:
                check_policy_file(path, policy, key, sink)
        elif policy not in known:
            sink.add(
                key,
                f"the offline model has no policy named `{policy}`",
                f"use one of: {', '.join(known)}, or a policy file (`policies/x.toml`)"
                + suggest(policy, known),
            )


def check_policy_file(path: Path, rel: str, key: str, sink: Collector) -> None:
    """A policy file the offline model could not read would fail every run it serves."""
    from agentab.errors import AgentabError
    from agentab.offline_model.policy import load_policy

    try:
        load_policy(str(path))
    except AgentabError as error:
        for found in error.problems:
            where = f"{found.key} of " if found.key else ""
            line = f" (its line {found.line})" if found.line else ""
            sink.add(key, f"{where}policy file `{rel}`{line}: {found.message}", found.fix)


def pick_reference(data: dict, cells: list[Cell], sink: Collector) -> str:
    baseline = next(
        (cell.name for cell in cells if cell.is_baseline), cells[0].name if cells else ""
    )
    wanted = data.get("protocol", {}).get("reference")
    if wanted is None:
        return baseline
    for cell in cells:
        if wanted in (cell.name, cell.slug):
            return cell.name
    sink.add(
        "protocol.reference",
        f"reference `{wanted}` is not a cell of this scenario",
        f"use one of: {', '.join(cell.name for cell in cells)}"
        + suggest(wanted, [c.name for c in cells]),
    )
    return baseline


# ---------------------------------------------------------------------------- values


def check_values(data: dict, sink: Collector) -> None:
    """What the schema lets through: a float that happens to be whole, a zero duration."""
    repetitions = data["protocol"]["repetitions"]
    if not isinstance(repetitions, int) or isinstance(repetitions, bool):
        sink.add(
            "protocol.repetitions",
            f"repetitions is {repetitions!r}, not an integer",
            f"write repetitions = {int(repetitions)}",
        )
    durations = [("agent.timeout", data["agent"]["timeout"])]
    if "setup_timeout" in data["etalon"]:
        durations.append(("etalon.setup_timeout", data["etalon"]["setup_timeout"]))
    durations += [
        (f"validators.{name}.timeout", spec["timeout"])
        for name, spec in data.get("validators", {}).items()
        if "timeout" in spec
    ]
    for key, value in durations:
        message = duration_problem(value)
        if message:
            sink.add(key, f"`{key}`: {message}", DURATION_FIX)


def check_limits_declared(data: dict, sink: Collector) -> None:
    """`[protocol] limits` decides what is measured (resource settings move agent scores), so
    a scenario that runs declares it; a frozen copy from before it existed still synthesizes."""
    limits = data["protocol"].get("limits")
    if limits is None:
        sink.add(
            "protocol.limits",
            "`protocol.limits` is missing; what a run may take of the machine decides what is "
            "measured, so it has no default",
            LIMITS_FIX,
        )
        return
    for key in ("memory", "disk", "patch"):
        message = size_problem(limits[key]) if key in limits else None
        if message:
            sink.add(f"protocol.limits.{key}", f"`protocol.limits.{key}`: {message}", LIMITS_FIX)


def check_protected_paths(data: dict, sink: Collector) -> None:
    """Each `[validation] protect` pattern names paths inside the repository."""
    for glob in data["validation"].get("protect") or ():
        message = glob_problem(glob)
        if message:
            sink.add(
                "validation.protect",
                f"`validation.protect`: {message}",
                'write paths relative to the repository\'s root, e.g. protect = ["tests/**", '
                '"**/conftest.py", "pytest.ini"]',
            )


def check_test_command(data: dict, sink: Collector) -> None:
    """`[validation] test_command` is a regular expression (the behaviour measures use it)."""
    message = pattern_problem(data["validation"].get("test_command") or "")
    if message:
        sink.add(
            "validation.test_command",
            f"`validation.test_command` {message}",
            r"write the start of the command, in single quotes (TOML keeps a backslash in them), "
            r"e.g. test_command = '(make test|tox)\b'",
        )


def check_scale(scenario) -> list[str]:
    """Jobs the workflow would build for a scenario; a warning past a comfortable size."""
    jobs = scenario.run_count * (
        2 + sum(1 for s in scenario.validators.values() if s.mode != "form")
    )
    if jobs <= COMFORTABLE_JOBS:
        return []
    return [
        f"{scenario.run_count} runs make {jobs} jobs: Snakemake takes minutes to plan past "
        f"{COMFORTABLE_JOBS} (docs/performance.md); run fewer repetitions first and plan the "
        "rest with `agentab plan`"
    ]
