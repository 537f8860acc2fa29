"""Which runs gave a metric a value: `ran_tests=false`, `turns>8`, for `agentab runs --metric`
and for the runs behind each rate on a cell's page.

A rate of 7/10 invites the question "which three?"; the answer is a list of runs, each a page
to read. A run is behind a metric's value only when it is valid and has the value in its
`measures.json` (a contract metric, an extra one, or a built-in).
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass

from agentab.errors import AgentabError, problem
from agentab.scenario.usage_names import USED_METRIC

COMPARISONS = {
    "<=": operator.le,
    ">=": operator.ge,
    "!=": operator.ne,
    "=": operator.eq,
    "<": operator.lt,
    ">": operator.gt,
}
FILTER = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*(<=|>=|!=|=|<|>)\s*(\S+)\s*$")
BOOLEANS = {"true": True, "false": False}


@dataclass(frozen=True)
class MetricFilter:
    metric: str
    comparison: str
    wanted: bool | float

    def matches(self, record) -> bool:
        value = metric_value(record, self.metric)
        if value is None:
            return False
        if isinstance(self.wanted, bool) or isinstance(value, bool):
            if not (isinstance(self.wanted, bool) and isinstance(value, bool)):
                return False
            return COMPARISONS[self.comparison](value, self.wanted)
        if not isinstance(value, int | float) or math.isnan(value):
            return False
        return COMPARISONS[self.comparison](value, self.wanted)


def metric_value(record, metric: str):
    """The run's value of a metric, or None (no measures, not valid, pending, or no such metric)."""
    if record is None or record.status != "valid" or metric in record.pending:
        return None
    for source in (record.metrics, record.extra, record.builtin or {}):
        if metric in source:
            return source[metric]
    used = (record.builtin or {}).get("bricks_used")
    if metric.startswith(USED_METRIC) and isinstance(used, dict):
        return used.get(metric.removeprefix(USED_METRIC))  # the use of a brick of its cell
    return None


def parse_metric_filter(text: str) -> MetricFilter:
    """`ran_tests=false`, `ran_tests=true`, `turns>8`, `cost_usd<=0.5`."""
    found = FILTER.match(text)
    wanted = _wanted(found.group(3)) if found else None
    if wanted is None or (isinstance(wanted, bool) and found.group(2) not in ("=", "!=")):
        raise AgentabError(
            problem(
                "--metric",
                "",
                f"{text!r} is not a metric and a value",
                "write NAME=true, NAME=false, or a number compared with =, !=, <, <=, > or >= "
                "(quote it for the shell: --metric 'turns>8')",
            )
        )
    return MetricFilter(found.group(1), found.group(2), wanted)


def _wanted(text: str) -> bool | float | None:
    if text.lower() in BOOLEANS:
        return BOOLEANS[text.lower()]
    try:
        return float(text)
    except ValueError:
        return None


def runs_by_value(entries, metric: str) -> dict[str, list]:
    """A boolean metric's runs by value, `true` first: the runs behind its rate."""
    grouped: dict[str, list] = {"true": [], "false": []}
    for entry in entries:
        value = metric_value(entry.record, metric)
        if isinstance(value, bool):
            grouped["true" if value else "false"].append(entry)
    return grouped
