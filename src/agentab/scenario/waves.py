"""`[protocol] stopping`: a fixed number of runs, or waves judged by the sequential rule.

- `stopping = "fixed"` (the default): every cell runs `repetitions` times and is judged once.
- `stopping = "sequential"`: runs come in waves of `wave` runs per cell (and task); after each
  wave the synthesis judges every gap by an anytime-valid confidence sequence
  (`agentab.stats.sequential`), and only the cells with a gap still undecided get the next
  wave, up to `repetitions` runs each. `decide` names the metrics whose gaps count (all the
  contract's by default): a metric filled by a form, or one that nobody expects to move, would
  otherwise keep every cell running to its maximum.

`repetitions` must be a whole number of waves, so that every look falls at the same number of
runs in every cell and the synthesis can tell each wave's runs by their run index alone.
"""

from __future__ import annotations

from agentab.scenario.source import Collector, suggest

FIXED = "fixed"
SEQUENTIAL = "sequential"


def check_stopping(data: dict, sink: Collector) -> None:
    """The stopping keys agree with each other and with the metric contract."""
    protocol = data["protocol"]
    stopping = protocol.get("stopping", FIXED)
    if stopping != SEQUENTIAL:
        for key in ("wave", "decide"):
            if key in protocol:
                sink.add(
                    f"protocol.{key}",
                    f'`protocol.{key}` is only read with stopping = "sequential"; this scenario '
                    "runs a fixed number of repetitions",
                    f'add stopping = "sequential" to [protocol], or remove {key}',
                )
        return
    wave = protocol.get("wave")
    repetitions = protocol["repetitions"]
    if wave is None:
        sink.add(
            "protocol.wave",
            '`protocol.wave` is missing; with stopping = "sequential" it decides how many '
            "runs each cell makes between two looks, so it has no default",
            "add wave = 5 to [protocol] (runs per cell in each wave)",
        )
    elif isinstance(wave, int) and isinstance(repetitions, int) and repetitions % wave:
        below, above = repetitions // wave * wave, (repetitions // wave + 1) * wave
        sink.add(
            "protocol.repetitions",
            f"repetitions = {repetitions} is not a whole number of waves of {wave}; every look "
            "must fall at the same number of runs in every cell",
            f"write repetitions = {above}" + (f" or {below}" if below else ""),
        )
    metrics = list(data["validation"]["metrics"])
    for name in protocol.get("decide") or []:
        if name not in metrics:
            sink.add(
                "protocol.decide",
                f"`{name}` in protocol.decide is not a metric of [validation] metrics",
                f"use metrics of the contract: {', '.join(metrics)}" + suggest(name, metrics),
            )


def stopping_of(raw: dict) -> str:
    return (raw.get("protocol") or {}).get("stopping", FIXED)
