"""Simulation: the sequential rule (`[protocol] stopping = "sequential"`). How often it calls a
gap established when there is none, looked at after every wave up to the maximum; how often it
establishes a real gap, and after how many runs, beside the fixed rule at the same maximum.
docs/synthesis.md keeps the tables this prints.

    python benchmarks/sim_sequential.py            # the full tables: a few minutes
    python benchmarks/sim_sequential.py --quick    # fewer experiments, as the suite runs it

Every decision is the synthesis's own (`agentab.stats.sequential.crossings`, the function
the synthesis's sequence path is built on): a cell's run i paired with the reference's run i
of the same task, a look after every wave, the gap established at the first look whose
sequence excludes 0. Under the null both cells draw each task's runs from that task's own
distribution (tasks differ: rates from near 0 to near 1, one task 100 times the others), so
every "established" is a false positive. The fixed rule is the synthesis's bootstrap verdict at
the maximum (`stats.bootstrap_gap`, one task). The exit status is 1 when a false-positive rate
is clearly above 5% (three Monte-Carlo standard errors).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np
from sim_tasks import Share  # the same share with its Monte-Carlo error

from agentab import stats
from agentab.metrics import MEDIAN, RATE
from agentab.stats import sequential

LEVEL = 0.05
PLANS = ((5, 30), (10, 50))  # (wave, repetitions): runs per cell per wave, and the maximum
TASKS = (1, 3)
SEED = 20_251_205


def spread(low: float, high: float, t: int, tasks: int) -> float:
    """Task t's level among `tasks`, evenly from low to high (one task: the first end)."""
    return low if tasks == 1 else low + (high - low) * t / (tasks - 1)


def hundredfold(t: int) -> float:
    return 100.0 if t == 0 else 1.0


def negative_binomial(rng, mean, shape: tuple, cv: float = 0.5) -> np.ndarray:
    """Counts of a given mean whose spread grows with it, plus one: turns, tool calls."""
    k = 1 / max(cv**2 - 1 / mean, 1e-3)
    return rng.poisson(rng.gamma(k, mean / k, shape)) + 1.0


# draw(rng, shape, task, tasks, effect) -> values; effect 0 under the null.
Draw = Callable[[np.random.Generator, tuple, int, int, float], np.ndarray]
NULLS: dict[str, tuple[str, Draw]] = {
    "rate near 0 (2-10%)": (
        RATE,
        lambda rng, s, t, T, e: rng.random(s) < spread(0.02, 0.10, t, T),
    ),
    "rate near 0.5 (40-60%)": (
        RATE,
        lambda rng, s, t, T, e: rng.random(s) < spread(0.4, 0.6, t, T),
    ),
    "rate near 1 (90-98%)": (
        RATE,
        lambda rng, s, t, T, e: rng.random(s) < spread(0.98, 0.90, t, T),
    ),
    "seconds (continuous), one task ×100": (
        MEDIAN,
        lambda rng, s, t, T, e: hundredfold(t) * rng.lognormal(np.log(30), 0.6, s),
    ),
    "turns (count), one task ×100": (
        MEDIAN,
        lambda rng, s, t, T, e: negative_binomial(rng, 6 * hundredfold(t), s),
    ),
    "count with zeros": (
        MEDIAN,
        lambda rng, s, t, T, e: rng.poisson(spread(1.5, 4, t, T), s).astype(float),
    ),
}
POWER: dict[str, tuple[str, Draw]] = {
    "rate 20% → 80%": (RATE, lambda rng, s, t, T, e: rng.random(s) < 0.2 + 0.6 * e),
    "rate 30% → 60%": (RATE, lambda rng, s, t, T, e: rng.random(s) < 0.3 + 0.3 * e),
    "rate 50% → 70%": (RATE, lambda rng, s, t, T, e: rng.random(s) < 0.5 + 0.2 * e),
    "seconds ×2": (
        MEDIAN,
        lambda rng, s, t, T, e: rng.lognormal(np.log(30) + math.log(2) * e, 0.6, s),
    ),
    "turns ×1.6": (MEDIAN, lambda rng, s, t, T, e: negative_binomial(rng, 6 * 1.6**e, s)),
}


def pair_stream(kind: str, cell: np.ndarray, reference: np.ndarray, wave: int) -> np.ndarray:
    """Each experiment's pairs in the synthesis's order: wave by wave, task by task, run by run.
    `cell`, `reference`: (experiments, tasks, runs)."""
    experiments, tasks, runs = cell.shape
    d = sequential.pair_values(kind, cell, reference)
    d = d.reshape(experiments, tasks, runs // wave, wave).transpose(0, 2, 1, 3)
    return d.reshape(experiments, -1)


def simulate(
    kind: str, draw: Draw, tasks: int, wave: int, maximum: int, effect: float, experiments: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(established at some look, runs per cell and task at the decision or the maximum) per
    experiment."""
    shape = (experiments, maximum)
    cell = np.stack([draw(rng, shape, t, tasks, effect) for t in range(tasks)], axis=1)
    reference = np.stack([draw(rng, shape, t, tasks, 0.0) for t in range(tasks)], axis=1)
    d = pair_stream(kind, cell.astype(float), reference.astype(float), wave)
    waves = maximum // wave
    ends = [k * wave * tasks for k in range(1, waves + 1)]
    crossed = sequential.crossings(d, ends, horizon=maximum * tasks)
    decided = crossed.any(axis=-1)
    first = np.where(decided, crossed.argmax(axis=-1) + 1, waves)
    return decided, first * wave


def false_positives(name: str, tasks: int, plan: tuple[int, int], experiments: int) -> Share:
    kind, draw = NULLS[name]
    rng = np.random.default_rng([SEED, list(NULLS).index(name), tasks, *plan])
    decided, _ = simulate(kind, draw, tasks, *plan, 0.0, experiments, rng)
    return Share(int(decided.sum()), experiments)


def fixed_power(kind: str, draw: Draw, maximum: int, experiments: int, rng) -> Share:
    """The fixed rule's verdict at the maximum (one task): the synthesis's bootstrap."""
    hits = 0
    for i in range(experiments):
        cell = draw(rng, (maximum,), 0, 1, 1.0).astype(float)
        reference = draw(rng, (maximum,), 0, 1, 0.0).astype(float)
        verdict = stats.bootstrap_gap(
            kind, cell.tolist(), reference.tolist(), cell_key=f"c{i}", reference_key=f"r{i}"
        )
        hits += verdict.is_established
    return Share(hits, experiments)


def percent(share: Share) -> str:
    return f"{100 * share.value:.1f}%"


def print_false_positives(plans, experiments: int) -> list[Share]:
    print(f"### False positives, a look after every wave ({experiments} experiments each)\n")
    columns = [f"{t} task{'s' * (t > 1)}, wave {w}, max {m}" for w, m in plans for t in TASKS]
    print("| null | " + " | ".join(columns) + " |")
    print("| --- |" + " --- |" * len(columns))
    shares = []
    for name in NULLS:
        row = [false_positives(name, t, plan, experiments) for plan in plans for t in TASKS]
        shares += row
        print(
            f"| {name} | " + " | ".join(f"{percent(s)} ± {100 * s.error:.1f}" for s in row) + " |"
        )
    print()
    return shares


def print_power(plans, experiments: int, fixed_experiments: int) -> None:
    print(
        f"### Power and runs against the fixed rule at the same maximum ({experiments} "
        f"experiments; the fixed rule {fixed_experiments})\n"
    )
    print("| gap | wave, max | sequential: established | runs per cell (mean) | fixed at max |")
    print("| --- | --- | --- | --- | --- |")
    for name, (kind, draw) in POWER.items():
        for wave, maximum in plans:
            rng = np.random.default_rng([SEED, 99, list(POWER).index(name), wave, maximum])
            decided, runs = simulate(kind, draw, 1, wave, maximum, 1.0, experiments, rng)
            ours = Share(int(decided.sum()), experiments)
            theirs = fixed_power(kind, draw, maximum, fixed_experiments, rng)
            print(
                f"| {name} | {wave}, {maximum} | {percent(ours)} | {runs.mean():.1f} "
                f"of {maximum} | {percent(theirs)} |"
            )
    print()


def clearly_above(share: Share, level: float) -> bool:
    """Above `level` by more than three Monte-Carlo standard errors at that level."""
    return share.value > level + 3 * math.sqrt(level * (1 - level) / share.trials)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer experiments")
    args = parser.parse_args(argv)
    nulls, powers, fixed = (2000, 500, 60) if args.quick else (20_000, 4000, 1000)
    shares = print_false_positives(PLANS, nulls)
    print_power(PLANS[:1] if args.quick else PLANS, powers, fixed)
    failures = [s for s in shares if clearly_above(s, LEVEL)]
    for share in failures:
        print(f"check failed: a false-positive rate of {percent(share)}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
