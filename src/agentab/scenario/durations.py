"""Durations as a scenario writes them: "90s", "15m", "1h", or a number of seconds."""

from __future__ import annotations

import re

DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([smh])")


def parse_duration(value: float | str) -> float:
    """Seconds; the scenario's schema has already refused any other form."""
    if isinstance(value, int | float):
        return float(value)
    number, unit = DURATION.fullmatch(value.strip()).groups()
    return float(number) * {"s": 1, "m": 60, "h": 3600}[unit]
