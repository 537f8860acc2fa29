"""Property tests of the cell expansion: count, deltas, order, slugs."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from agentab.scenario.cells import BASELINE_NAME_WITHOUT_AXES, expand, slugify
from agentab.scenario.rules import check_cell_names
from agentab.scenario.source import Collector

value_names = st.text(alphabet="abcdefgh", min_size=1, max_size=4)


@st.composite
def matrices(draw):
    dimensions = draw(
        st.lists(st.sampled_from(["ctx", "think", "tool", "task"]), max_size=3, unique=True)
    )
    axes = {d: draw(st.lists(value_names, min_size=1, max_size=3, unique=True)) for d in dimensions}
    deltas = {
        d: {v: {"context_files": [f"{d}/{v}.md"]} for v in values[1:]} for d, values in axes.items()
    }
    variants = {}
    for number in range(draw(st.integers(0, 2))):
        deltas.setdefault("extra", {})[f"x{number}"] = {"skills": [f"skills/{number}"]}
        variants[f"variant {number}"] = {"extra": [f"x{number}"]}
    return axes, deltas, variants


@given(matrices())
def test_count_is_product_of_axes_plus_variants(matrix) -> None:
    axes, deltas, variants = matrix
    plans = expand(axes, deltas, variants)
    assert len(plans) == math.prod(len(v) for v in axes.values()) + len(variants)


@given(matrices())
def test_each_grid_cell_differs_from_baseline_by_exactly_its_deltas(matrix) -> None:
    axes, deltas, variants = matrix
    for plan in expand(axes, deltas, variants):
        if plan.is_variant:
            continue
        expected = [f"{d}/{v}.md" for d, v in plan.delta.items()]
        assert plan.settings.get("context_files", []) == expected
        assert all(v != axes[d][0] for d, v in plan.delta.items())
        assert plan.is_baseline == (not plan.delta)


@given(matrices())
def test_order_is_stable_first_axis_slowest(matrix) -> None:
    axes, deltas, variants = matrix
    names = [p.name for p in expand(axes, deltas, variants)]
    product = itertools.product(*axes.values())  # no axis: one empty tuple, the baseline
    expected = [" · ".join(values) or BASELINE_NAME_WITHOUT_AXES for values in product]
    assert names == expected + list(variants)
    grid = [p for p in expand(axes, deltas, variants) if not p.is_variant]
    assert grid[0].is_baseline
    if axes:
        first_axis = list(axes)[0]
        block = math.prod(len(v) for v in list(axes.values())[1:])
        for index, plan in enumerate(grid):
            assert plan.name.split(" · ")[0] == axes[first_axis][index // block]
    else:
        assert grid[0].name == BASELINE_NAME_WITHOUT_AXES
    assert [p.name for p in expand(axes, deltas, variants) if p.is_variant] == list(variants)


# Names a person may write, slugs that may collide: "Rule A", "rule-a" and "rule · a" share one.
cell_names = st.lists(st.text(alphabet="aB -·!", min_size=1, max_size=5), max_size=5, unique=True)


@given(cell_names)
def test_cells_whose_slugs_collide_are_refused_and_only_they(names) -> None:
    cells = [SimpleNamespace(name=n, slug=slugify(n), is_variant=True) for n in names]
    sink = Collector(Path("scenario.toml"), "")
    check_cell_names(cells, sink)
    slugs = [cell.slug for cell in cells]
    clash = len(set(slugs)) != len(slugs) or "" in slugs
    assert bool(sink.problems) == clash


def test_slug_rule() -> None:
    assert slugify("rule · off") == "rule-off"
    assert slugify("  Full Stack!! ") == "full-stack"
    assert slugify("careful ticket · high") == "careful-ticket-high"
