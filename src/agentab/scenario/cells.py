"""Cell expansion: the grid (cartesian product of the axes) followed by the named variants.

Pure functions over plain data, so that the rules of the matrix can be property-tested
without files: the baseline of an axis is its first value and declares no delta; every
other value brings its declared delta; a variant is the baseline plus the deltas it names.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

BRICK_KINDS = ("context_files", "extensions", "skills", "agents")
TASK_KEYS = ("prompt", "prompt_file")
CELL_NAME_JOINER = " · "
BASELINE_NAME_WITHOUT_AXES = "baseline"


@dataclass(frozen=True)
class CellDraft:
    """A cell as the matrix declares it, before its paths and agent fields are resolved."""

    name: str
    is_baseline: bool
    is_variant: bool
    delta: dict[str, str]  # dimension -> value, for every value that declares a delta
    settings: dict = field(default_factory=dict)  # the merged delta: bricks by kind, scalars
    conflicts: list[str] = field(default_factory=list)  # scalars set by two deltas of this cell


def slugify(name: str) -> str:
    """A cell's results slug: lower case, each run outside a-z0-9 becomes one '-', trimmed."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def grid_cell_name(values: tuple[str, ...]) -> str:
    return CELL_NAME_JOINER.join(values) if values else BASELINE_NAME_WITHOUT_AXES


def merge_deltas(named: list[tuple[str, str, dict]]) -> tuple[dict, list[str]]:
    """Merge (dimension, value, delta) in order: brick lists concatenate, a scalar may be set once."""
    merged: dict = {}
    conflicts: list[str] = []
    setters: dict[str, str] = {}
    for dimension, value, delta in named:
        for key, setting in delta.items():
            if key in BRICK_KINDS:
                kept = merged.setdefault(key, [])
                kept.extend(path for path in setting if path not in kept)
                continue
            slot = "task" if key in TASK_KEYS else key
            who = f"deltas.{dimension}.{value}"
            if slot in setters:
                conflicts.append(f"{slot} is set by both {setters[slot]} and {who}")
                continue
            setters[slot] = who
            merged[key] = setting
    return merged, conflicts


def expand_grid(axes: dict[str, list[str]], deltas: dict[str, dict[str, dict]]) -> list[CellDraft]:
    """The cartesian product in axis declaration order; the first axis varies slowest."""
    plans = []
    dimensions = list(axes)
    for values in itertools.product(*(axes[d] for d in dimensions)):
        named = [
            (dimension, value, deltas.get(dimension, {}).get(value, {}))
            for dimension, value in zip(dimensions, values, strict=True)
            if value != axes[dimension][0]
        ]
        settings, conflicts = merge_deltas(named)
        plans.append(
            CellDraft(
                name=grid_cell_name(values),
                is_baseline=not named,
                is_variant=False,
                delta=_joined_delta(named),
                settings=settings,
                conflicts=conflicts,
            )
        )
    return plans


def expand_variant(
    name: str,
    choice: dict[str, list[str]],
    axes: dict[str, list[str]],
    deltas: dict[str, dict[str, dict]],
) -> CellDraft:
    """Baseline plus the named deltas; naming an axis's baseline value adds nothing."""
    named = [
        (dimension, value, deltas.get(dimension, {}).get(value, {}))
        for dimension, values in choice.items()
        for value in values
        if not (dimension in axes and value == axes[dimension][0])
    ]
    settings, conflicts = merge_deltas(named)
    return CellDraft(
        name=name,
        is_baseline=False,
        is_variant=True,
        delta=_joined_delta(named),
        settings=settings,
        conflicts=conflicts,
    )


def _joined_delta(named: list[tuple[str, str, dict]]) -> dict[str, str]:
    """dimension -> value; a variant naming several values of one dimension joins them with '+'."""
    joined: dict[str, list[str]] = {}
    for dimension, value, _ in named:
        joined.setdefault(dimension, []).append(value)
    return {dimension: "+".join(values) for dimension, values in joined.items()}


def expand(
    axes: dict[str, list[str]],
    deltas: dict[str, dict[str, dict]],
    variants: dict[str, dict[str, list[str]]],
) -> list[CellDraft]:
    """Every cell in rendered order: the grid, then the variants in declaration order."""
    plans = expand_grid(axes, deltas)
    plans.extend(expand_variant(name, choice, axes, deltas) for name, choice in variants.items())
    return plans
