"""How the judge's section, the frontier and the per-task lines write a figure: `42%`, `+30 pp`,
`-2`. Zero is written 0, never +0 or -0."""

from __future__ import annotations

from agentab import stats
from agentab.metrics import RATE


def percent(share: float) -> str:
    """A rate as a whole percentage: 0.425 -> `42%`."""
    return f"{100 * share:.0f}%"


def signed(value: float, kind: str = RATE) -> str:
    """A gap: `+30 pp` for a rate (three significant digits), `+2` for a median (four)."""
    digits = f"{100 * value:+.3g}" if kind == RATE else f"{value:+.4g}"
    text = "0" if float(digits) == 0 else digits
    return f"{text} pp" if kind == RATE else text


def signed_interval(low: float, high: float) -> str:
    """A rate gap's interval: `[+56.8, +100] pp`."""
    return "[{}, {}] pp".format(*(signed(end).removesuffix(" pp") for end in (low, high)))


def p_text(p: float) -> str:
    """A p-value: with `stats.DRAWS` draws the smallest non-zero p is 2 / DRAWS."""
    return f"< {2 / stats.DRAWS:g}" if p == 0 else f"{p:.3g}"
