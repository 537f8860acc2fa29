"""Bricks delivered beside bricks used, per cell, and the warning about a brick the agent was
given and mostly left alone.

A receipt proves that a brick reached the model; `builtin.brick_usage` of each run
(`synthesis.usage`) says whether the agent used it. A cell whose skill was never opened measures
"no skill" under the skill's name: published, a Next.js skill was never invoked in 56% of runs,
and the cell with the skill scored like the one without. So the synthesis shows both side by
side, over every run of the cell that has measures (valid, invalid or failed: use is behaviour,
whatever a validator made of the result), and warns when a delivered brick was used in fewer
than half of the runs it reached.
"""

from __future__ import annotations

from dataclasses import dataclass, field

USED_WARNING = 0.5  # a delivered brick used in fewer than this share of its runs is named


@dataclass
class BrickTally:
    """One brick of one cell, over the cell's runs."""

    cell: str
    brick: str
    kind: str
    harness: str = ""
    runs: int = 0
    delivered: int = 0  # runs whose receipt proved it reached the model
    unproven: int = 0  # runs whose harness cannot prove its delivery
    used: int = 0  # of the runs it reached (or was given, when unproven)
    observable: bool = True
    why: str = ""
    first_turns: list[int] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)

    @property
    def reached(self) -> int:
        return self.delivered + self.unproven


def brick_tallies(result, scenario) -> list[BrickTally]:
    """Per cell (in the scenario's order) and brick (in the cell's order), delivery and use."""
    tallies: dict[tuple[str, str], BrickTally] = {}
    for run in result.runs:
        delivery = (run.receipt or {}).get("bricks")
        delivery = delivery if isinstance(delivery, dict) else {}
        for record in (run.builtin or {}).get("brick_usage") or []:
            if isinstance(record, dict) and isinstance(record.get("rel"), str):
                add_run(tallies, run, record, delivery.get(record["rel"]))
    order = {cell.name: index for index, cell in enumerate(scenario.cells)}
    return sorted(tallies.values(), key=lambda t: order.get(t.cell, len(order)))


def add_run(tallies: dict, run, record: dict, delivered) -> None:
    key = (run.cell, record["rel"])
    tally = tallies.get(key) or BrickTally(
        run.cell, str(record.get("brick") or record["rel"]), str(record.get("kind"))
    )
    tallies[key] = tally
    tally.harness = str(run.provenance.get("harness") or "")
    tally.runs += 1
    tally.delivered += delivered is True
    tally.unproven += delivered is None
    if record.get("used") is None:
        tally.observable, tally.why = False, str(record.get("why") or "")
        return
    if delivered is False:
        return  # a run its brick never reached: counted in `runs`, not in its use
    if record.get("used") is True:
        tally.used += 1
        if isinstance(record.get("first_turn"), int):
            tally.first_turns.append(record["first_turn"])
    for what, count in (record.get("calls") or {}).items():
        if isinstance(count, int):
            tally.calls[what] = tally.calls.get(what, 0) + count


def brick_use_rows(result, scenario) -> list[dict]:
    """The rows of the synthesis's table of bricks: delivered and used, per cell."""
    return [
        {
            "cell": t.cell,
            "brick": t.brick,
            "kind": t.kind,
            "delivered": delivered_text(t),
            "used": f"{t.used}/{t.reached}" if t.observable else "not observable",
            "first_turn": first_turn_text(t),
            "calls": ", ".join(f"{what} × {n}" for what, n in sorted(t.calls.items())) or "—",
        }
        for t in brick_tallies(result, scenario)
    ]


def delivered_text(tally: BrickTally) -> str:
    if tally.unproven:
        return f"{tally.reached}/{tally.runs} given (cannot be proven on {tally.harness})"
    return f"{tally.delivered}/{tally.runs}"


def first_turn_text(tally: BrickTally) -> str:
    if not tally.first_turns:
        return "—"
    from statistics import median  # here: 2 ms of imports a synthesis that has no bricks skips

    return f"{median(tally.first_turns):g}"


def brick_use_warnings(result, scenario) -> list[str]:
    """A brick that reached the model and was used in fewer than half of those runs: the
    cell measures a brick the agent mostly did not open."""
    return [
        f"`{t.brick}` {reached_words(t)} in {t.reached}/{t.runs} runs of `{t.cell}` and was "
        f"used in {t.used} (built-in `bricks_used.{t.brick}`): a gap of this cell measures "
        f"{KIND_WORD.get(t.kind, 'a brick')} the agent mostly did not use, not what using it does"
        for t in brick_tallies(result, scenario)
        if t.observable and t.reached and t.used < USED_WARNING * t.reached
    ]


def reached_words(tally: BrickTally) -> str:
    if tally.unproven:
        return f"was given to the agent (its delivery cannot be proven on {tally.harness})"
    return "reached the model"


KIND_WORD = {"skills": "a skill", "extensions": "an extension", "agents": "an agent definition"}
