"""Durations as a scenario writes them: "90s", "15m", "1h", or a number of seconds."""

from __future__ import annotations

import math
import re

DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([smh])")
UNITS = {"s": 1, "m": 60, "h": 3600}
# No agent run, setup or validator of a scenario is meant to take longer: a larger limit is a
# slip of unit ("1000h" for "1000s"), and a run that hangs would hold its job for weeks.
LONGEST_S = 24 * 3600
DURATION_KEYS = ("timeout", "setup_timeout")
DURATION_FIX = 'write a duration such as "90s", "15m" or "1h" (at most "24h"), or whole seconds'


def parse_duration(value: float | str) -> float:
    """Seconds; the scenario's schema has already refused any other form."""
    if isinstance(value, int | float):
        return float(value)
    number, unit = DURATION.fullmatch(value.strip()).groups()
    return float(number) * UNITS[unit]


def duration_problem(value) -> str | None:
    """Why a value is not a sane time limit, said for a person, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return f"{value!r} is not a duration"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a finite duration"
    if isinstance(value, float) and not value.is_integer():
        return f"{value!r} is not a duration (seconds are written as a whole number)"
    if isinstance(value, str) and not DURATION.fullmatch(value.strip()):
        return f"{value!r} is not a duration"
    seconds = parse_duration(value)
    if not math.isfinite(seconds) or seconds < 1:
        return f"a time limit of {value!r} ends every run at once"
    if seconds > LONGEST_S:
        return f"a time limit of {value!r} is longer than a day: a slip of unit?"
    return None
