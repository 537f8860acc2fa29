"""Simulation: the pooled verdict over several tasks. How often it calls a gap established when
there is none, over a grid of tasks, runs, rates and scales; how often it establishes a real gap,
beside a Cochran-Mantel-Haenszel test (rates) and van Elteren's stratified rank test (medians) on
the same data; and how often the A/A warning fires in a null report. docs/synthesis.md keeps the
tables this prints.

    python benchmarks/sim_tasks.py            # the full grid: about an hour on two cores
    python benchmarks/sim_tasks.py --quick    # a few entries of each table, as the suite runs it

Every verdict is the synthesis's own (`judge`): one task, the bootstrap of each group and the
9-run minimum; several, `strata.pooled_gap_verdict` (the stratified shuffles) and the minimums
of `verdicts.too_few_runs`, 10 000 draws each. Under the null both cells draw each task's runs
from that task's own distribution, and tasks differ (rates from 0 to 1, one task 100 times the
others), so every "established" is a false positive. The quick run checks what the docs claim,
loosely (its few experiments allow no more): no false-positive rate clearly above 5%, and the
power near the reference tests'. The exit status is 1 when a check fails.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import norm, rankdata
from statsmodels.stats.contingency_tables import StratifiedTable

from agentab import stats
from agentab.metrics import MEDIAN, RATE
from agentab.stats import strata
from agentab.synthesis.verdicts import Gap, too_few_runs

LEVEL = 0.05
TASKS = (1, 2, 3, 4, 5, 8)
RUNS = (3, 4, 5, 7, 10)
LAYOUTS = {"equal runs": 1, "reference ×2": 2}  # the reference's runs per task: n × this
POWER_SHAPES = ((3, 5), (5, 5))  # tasks × runs per task


def spread(low: float, high: float, t: int, tasks: int) -> float:
    """Task t's level among `tasks`, evenly from low to high (one task: the middle)."""
    return (low + high) / 2 if tasks == 1 else low + (high - low) * t / (tasks - 1)


def negative_binomial(rng, mean: float, n: int, cv: float = 0.5) -> np.ndarray:
    """Counts of a given mean whose spread grows with it (a gamma-Poisson mixture), plus one:
    turns, tool calls."""
    shape = 1 / max(cv**2 - 1 / mean, 1e-3)
    return rng.poisson(rng.gamma(shape, mean / shape, n)) + 1.0


def hundredfold(t: int) -> float:
    """The first task's values are 100 times the others'."""
    return 100.0 if t == 0 else 1.0


# A distribution: draw(rng, runs, task, tasks, effect) -> values; effect 0 under the null.
Draw = Callable[[np.random.Generator, int, int, int, float], np.ndarray]
NULLS: dict[str, tuple[str, Draw]] = {
    "rate, tasks from 0 to 1": (
        RATE,
        lambda rng, n, t, T, e: rng.random(n) < spread(0.0, 1.0, t, T),
    ),
    "rate, all 0.5": (RATE, lambda rng, n, t, T, e: rng.random(n) < 0.5),
    "rate, rare (2-15%)": (RATE, lambda rng, n, t, T, e: rng.random(n) < spread(0.02, 0.15, t, T)),
    "seconds, one task ×100": (
        MEDIAN,
        lambda rng, n, t, T, e: hundredfold(t) * rng.lognormal(np.log(30), 0.6, n),
    ),
    "turns, one task ×100": (
        MEDIAN,
        lambda rng, n, t, T, e: negative_binomial(rng, 6 * hundredfold(t), n),
    ),
    "count with zeros, one task ×100": (
        MEDIAN,
        lambda rng, n, t, T, e: rng.poisson(1.5 * hundredfold(t), n).astype(float),
    ),
}
# The same kinds of metric with a real gap: a rate 20 points higher in every task; a median
# 1.6 times (numbers) or 1.8 times (a count with zeros) as large; a score moved by 0.8 of its
# spread. The score has negative values, so it is pooled as it is, one task 100 times wider.
POWER: dict[str, tuple[str, Draw]] = {
    "rate, 0.3-0.5 +20 pp": (
        RATE,
        lambda rng, n, t, T, e: rng.random(n) < spread(0.3, 0.5, t, T) + 0.2 * e,
    ),
    "rate, 0.05-0.3 +20 pp": (
        RATE,
        lambda rng, n, t, T, e: rng.random(n) < spread(0.05, 0.3, t, T) + 0.2 * e,
    ),
    "rate, 0.5-0.8 +20 pp": (
        RATE,
        lambda rng, n, t, T, e: rng.random(n) < spread(0.5, 0.8, t, T) + 0.2 * e,
    ),
    "seconds ×1.6, one task ×100": (
        MEDIAN,
        lambda rng, n, t, T, e: hundredfold(t) * rng.lognormal(np.log(30) + 0.47 * e, 0.6, n),
    ),
    "turns ×1.6, one task ×100": (
        MEDIAN,
        lambda rng, n, t, T, e: negative_binomial(rng, 6 * hundredfold(t) * 1.6**e, n),
    ),
    "turns ×1.6, tasks of 4-12": (
        MEDIAN,
        lambda rng, n, t, T, e: negative_binomial(rng, spread(4, 12, t, T) * 1.6**e, n),
    ),
    "score +0.8 sd, one task ×100": (
        MEDIAN,
        lambda rng, n, t, T, e: hundredfold(t) * rng.normal(0.8 * e, 1.0, n),
    ),
    "count with zeros ×1.8": (
        MEDIAN,
        lambda rng, n, t, T, e: rng.poisson(1.5 * 1.8**e, n).astype(float),
    ),
}


def judge(kind: str, cell: list, reference: list, key: str) -> stats.GapVerdict:
    """The synthesis's verdict on a gap: `cell[i]`, `reference[i]` the values in task i."""
    if len(cell) == 1:
        verdict = stats.bootstrap_gap(
            kind, cell[0], reference[0], cell_key=f"{key}c", reference_key=f"{key}r"
        )
    else:
        scale = strata.scale_of(kind, [value for group in cell + reference for value in group])
        verdict = strata.pooled_gap_verdict(kind, scale, cell, reference, key)
    gap = Gap(
        cell="cell", reference="reference", metric="m", kind=kind,
        n_cell=sum(map(len, cell)), n_ref=sum(map(len, reference)),
        value_cell=0.0, value_ref=0.0, verdict=verdict, p_holm=None,
        fewest_in_a_task=min(map(len, cell + reference)) if len(cell) > 1 else None,
    )  # fmt: skip
    return too_few_runs(gap).verdict


def never_judged(tasks: int, n_cell: int, n_ref: int) -> bool:
    """Below the rule's minimums no gap is established: no need to simulate."""
    fewest = min(n_cell, n_ref)
    return tasks * fewest < stats.MIN_RUNS_PER_GROUP or (
        tasks > 1 and fewest < stats.MIN_RUNS_PER_TASK
    )


def experiment(rng, draw: Draw, tasks: int, n_cell: int, n_ref: int, effect: float):
    cell = [draw(rng, n_cell, t, tasks, effect).tolist() for t in range(tasks)]
    reference = [draw(rng, n_ref, t, tasks, 0.0).tolist() for t in range(tasks)]
    return cell, reference


@dataclass
class Share:
    """A share of experiments, with its Monte-Carlo error."""

    hits: int
    trials: int

    @property
    def value(self) -> float:
        return self.hits / self.trials

    @property
    def error(self) -> float:
        """The 95% Monte-Carlo half-width (normal approximation, at least that of one hit)."""
        p = max(self.value, 1 / self.trials)
        return 1.96 * math.sqrt(p * (1 - p) / self.trials)


def false_positives(
    name: str, tasks: int, n: int, layout: int, experiments: int, again: int = 0
) -> Share:
    """`again` > 0: fresh experiments (other seeds), to look again at an entry."""
    kind, draw = NULLS[name]
    rng = np.random.default_rng([tasks, n, layout, len(name), again])
    hits = 0
    for index in range(experiments):
        cell, reference = experiment(rng, draw, tasks, n, n * layout, 0.0)
        key = f"null\x1f{name}\x1f{tasks}\x1f{n}\x1f{layout}\x1f{again}\x1f{index}"
        hits += judge(kind, cell, reference, key).is_established
    return Share(hits, experiments)


def cmh_p(cell: list, reference: list) -> float:
    tables = [
        [[sum(mine), len(mine) - sum(mine)], [sum(theirs), len(theirs) - sum(theirs)]]
        for mine, theirs in zip(cell, reference, strict=True)
    ]
    p = StratifiedTable(np.array(tables, dtype=float).transpose(1, 2, 0)).test_null_odds().pvalue
    return 1.0 if math.isnan(p) else float(p)


def van_elteren_p(cell: list, reference: list) -> float:
    """van Elteren's stratified Wilcoxon test: each task's rank sum weighted by 1 / (N + 1),
    ties averaged and corrected for, normal approximation."""
    total = variance = 0.0
    for mine, theirs in zip(cell, reference, strict=True):
        runs = np.concatenate([mine, theirs])
        n1, n2, size = len(mine), len(theirs), len(mine) + len(theirs)
        ranks = rankdata(runs)
        _, counts = np.unique(runs, return_counts=True)
        ties = float(np.sum(counts**3 - counts)) / (size * (size - 1))
        weight = 1 / (size + 1)
        total += weight * (ranks[:n1].sum() - n1 * (size + 1) / 2)
        variance += weight**2 * n1 * n2 / 12 * (size + 1 - ties)
    return 1.0 if variance == 0 else float(2 * norm.sf(abs(total) / math.sqrt(variance)))


def power(name: str, tasks: int, n: int, experiments: int) -> tuple[Share, Share]:
    """(ours, the reference test's) on the same experiments."""
    kind, draw = POWER[name]
    other = cmh_p if kind == RATE else van_elteren_p
    rng = np.random.default_rng([tasks, n, 7, len(name)])
    ours = theirs = 0
    for index in range(experiments):
        cell, reference = experiment(rng, draw, tasks, n, n, 1.0)
        key = f"power\x1f{name}\x1f{tasks}\x1f{n}\x1f{index}"
        verdict = judge(kind, cell, reference, key)
        ours += verdict.is_established and verdict.gap > 0
        theirs += other(cell, reference) < LEVEL
    return Share(ours, experiments), Share(theirs, experiments)


AA_METRICS = (
    (RATE, lambda rng, n, t: rng.random(n) < spread(0.2, 0.8, t, 3)),
    (RATE, lambda rng, n, t: rng.random(n) < 0.5),
    (MEDIAN, lambda rng, n, t: negative_binomial(rng, spread(4, 12, t, 3), n)),
    (MEDIAN, lambda rng, n, t: hundredfold(t) * rng.lognormal(np.log(30), 0.6, n)),
)


def aa_warnings(tasks: int, n: int, experiments: int) -> tuple[Share, Share]:
    """Null reports of four A/A gaps: (a warning as before: any established; a warning now:
    an established gap whose Holm p over the four stays below 5%)."""
    rng = np.random.default_rng([tasks, n, 11])
    before = now = 0
    for index in range(experiments):
        verdicts = []
        for metric, (kind, draw) in enumerate(AA_METRICS):
            copy = [draw(rng, n, t).tolist() for t in range(tasks)]
            reference = [draw(rng, n, t).tolist() for t in range(tasks)]
            verdicts.append(judge(kind, copy, reference, f"aa\x1f{tasks}\x1f{index}\x1f{metric}"))
        held = stats.holm([verdict.p for verdict in verdicts])
        before += any(verdict.is_established for verdict in verdicts)
        now += any(v.is_established and p < LEVEL for v, p in zip(verdicts, held, strict=True))
    return Share(before, experiments), Share(now, experiments)


def percent(share: Share) -> str:
    return f"{100 * share.value:.1f}%"


def print_false_positives(grid, experiments: int) -> tuple[list[Share], list[Share]]:
    """The table, then each metric's share over its entries and a second look at the entries
    above 5%: (every entry, the pooled shares and the second looks)."""
    names, tasks, runs, layouts = grid
    print(f"### False positives under the null ({experiments} experiments per entry)\n")
    print("— : below a minimum, never established.\n")
    header = " | ".join(f"{t} task{'s' * (t > 1)}" for t in tasks)
    print(f"| metric | runs | per task | {header} |")
    print("| --- | --- | --- |" + " --- |" * len(tasks))
    found = {}
    for name in names:
        for layout_name, layout in layouts.items():
            for n in runs:
                entries = []
                for t in tasks:
                    if never_judged(t, n, n * layout):
                        entries.append("—")
                        continue
                    share = false_positives(name, t, n, layout, experiments)
                    found[name, layout_name, n, t] = share
                    entries.append(percent(share))
                print(f"| {name} | {layout_name} | {n} | " + " | ".join(entries) + " |", flush=True)
    shares = list(found.values())
    worst = max(shares, key=lambda share: share.value)
    mean = sum(share.hits for share in shares) / sum(share.trials for share in shares)
    at_level = Share(round(LEVEL * experiments), experiments).error
    print(
        f"\nworst: {percent(worst)} ± {100 * worst.error:.1f} pp; mean over the "
        f"{len(shares)} entries: {100 * mean:.2f}%; Monte-Carlo error of an entry at 5%: "
        f"± {100 * at_level:.1f} pp (95%)\n"
    )
    by_metric = print_by_metric(found)
    above = {entry: share for entry, share in found.items() if somewhat_above(share)}
    return shares, by_metric + look_again(above, layouts, 4 * experiments)


def somewhat_above(share: Share) -> bool:
    """More than two Monte-Carlo standard errors above 5%: worth a second look."""
    return share.value > LEVEL + 2 * math.sqrt(LEVEL * (1 - LEVEL) / share.trials)


def print_by_metric(found: dict) -> list[Share]:
    """Each metric's false positives over all its entries: where the rule is exact (the
    shuffles of a continuous metric) the entries scatter around 5% by chance alone, and only
    their pooled share tells whether the rule keeps its 5%."""
    print("Each metric over all its entries:\n")
    print("| metric | entries | experiments | false positives |")
    print("| --- | --- | --- | --- |")
    pooled = []
    for name in dict.fromkeys(entry[0] for entry in found):
        mine = [share for entry, share in found.items() if entry[0] == name]
        pooled.append(Share(sum(s.hits for s in mine), sum(s.trials for s in mine)))
        print(
            f"| {name} | {len(mine)} | {pooled[-1].trials} | "
            f"{100 * pooled[-1].value:.2f}% ± {100 * pooled[-1].error:.2f} |"
        )
    print()
    return pooled


def look_again(above: dict, layouts: dict, experiments: int) -> list[Share]:
    """Every entry more than two Monte-Carlo errors above 5%, run again on fresh experiments:
    among a hundred entries of an exact rule, two or three land there by chance alone, and a
    second look tells chance from a real excess."""
    if not above:
        return []
    print(
        f"Entries more than two Monte-Carlo errors above 5%, each run again on {experiments} "
        "fresh experiments:\n"
    )
    print("| metric | runs | per task | tasks | first | again |")
    print("| --- | --- | --- | --- | --- | --- |")
    again = []
    for (name, layout_name, n, t), first in above.items():
        share = false_positives(name, t, n, layouts[layout_name], experiments, again=1)
        again.append(share)
        print(
            f"| {name} | {layout_name} | {n} | {t} | {percent(first)} | "
            f"{percent(share)} ± {100 * share.error:.1f} |",
            flush=True,
        )
    print()
    return again


def print_power(names, shapes, experiments: int) -> list[tuple[str, Share, Share]]:
    print(f"### Power beside the stratified tests ({experiments} experiments per entry)\n")
    print("| metric | tasks × runs | agentab | reference test | ratio |")
    print("| --- | --- | --- | --- | --- |")
    found = []
    for name in names:
        test = "CMH" if POWER[name][0] == RATE else "van Elteren"
        for tasks, n in shapes:
            ours, theirs = power(name, tasks, n, experiments)
            found.append((name, ours, theirs))
            ratio = ours.value / theirs.value if theirs.hits else float("nan")
            print(
                f"| {name} | {tasks} × {n} | {percent(ours)} ± {100 * ours.error:.1f} | "
                f"{test} {percent(theirs)} ± {100 * theirs.error:.1f} | {ratio:.2f} |",
                flush=True,
            )
    print()
    return found


def print_aa(shapes, experiments: int) -> list[Share]:
    print(f"### The A/A warning in null reports of four metrics ({experiments} reports)\n")
    print("| tasks × runs | any established A/A gap (before) | after Holm over the A/A gaps |")
    print("| --- | --- | --- |")
    found = []
    for tasks, n in shapes:
        before, now = aa_warnings(tasks, n, experiments)
        found.append(now)
        print(
            f"| {tasks} × {n} | {percent(before)} ± {100 * before.error:.1f} | "
            f"{percent(now)} ± {100 * now.error:.1f} |",
            flush=True,
        )
    print()
    return found


def clearly_above(share: Share, level: float) -> bool:
    """Above `level` by more than three Monte-Carlo standard errors at that level."""
    return share.value > level + 3 * math.sqrt(level * (1 - level) / share.trials)


def again_from(printed: Path) -> list[Share]:
    """`look_again` on the entries above 5% of a false-positive table printed before."""
    lines = printed.read_text(encoding="utf-8").split("### Power", 1)[0].splitlines()
    header = next(line for line in lines if line.startswith("| metric | runs | per task |"))
    tasks = [int(cell.split()[0]) for cell in header.strip("|").split("|")[3:]]
    experiments = int(re.search(r"\((\d+) experiments", "\n".join(lines))[1])
    found = {}
    for line in lines:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) != 3 + len(tasks) or cells[0] not in NULLS:
            continue
        for t, entry in zip(tasks, cells[3:], strict=True):
            if entry != "—":
                hits = round(float(entry.rstrip("%")) * experiments / 100)
                found[cells[0], cells[1], int(cells[2]), t] = Share(hits, experiments)
    by_metric = print_by_metric(found)
    above = {entry: share for entry, share in found.items() if somewhat_above(share)}
    return by_metric + look_again(above, LAYOUTS, 4 * experiments)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few entries, few experiments")
    parser.add_argument(
        "--only",
        choices=("null", "power", "aa"),
        help="one table of the full run: the same figures, as every entry has its own seed",
    )
    parser.add_argument(
        "--again",
        metavar="TABLE",
        type=Path,
        help="only each metric's share over its entries, and a second look at the entries "
        "clearly above 5%%, of a table this script printed",
    )
    args = parser.parse_args(argv)
    if args.again:
        return 1 if any(clearly_above(s, LEVEL) for s in again_from(args.again)) else 0
    if args.quick:
        grid = (list(NULLS)[::2], (3,), (3,), {"reference ×2": 2})
        nulls, powers, aa = 200, 150, 200
        power_names = ["rate, 0.3-0.5 +20 pp", "seconds ×1.6, one task ×100"]
        shapes, aa_shapes = ((5, 5),), ((3, 5),)
    else:
        grid = (list(NULLS), TASKS, RUNS, LAYOUTS)
        nulls, powers, aa = 1000, 2000, 1000
        power_names, shapes, aa_shapes = list(POWER), POWER_SHAPES, ((1, 10), (3, 5))
    wanted = {args.only} if args.only else {"null", "power", "aa"}
    entries, summaries = print_false_positives(grid, nulls) if "null" in wanted else ([], [])
    powered = print_power(power_names, shapes, powers) if "power" in wanted else []
    warned = print_aa(aa_shapes, aa) if "aa" in wanted else []
    # A hundred exact entries put one or two three errors above 5% by chance: the full run
    # checks each metric's pooled share and the second looks; the quick run its few entries.
    checked = entries if args.quick else summaries
    failures = [
        f"a false-positive rate of {percent(s)}" for s in checked if clearly_above(s, LEVEL)
    ]
    failures += [f"an A/A warning rate of {percent(s)}" for s in warned if clearly_above(s, LEVEL)]
    failures += [
        f"{name}: power {percent(ours)} against {percent(theirs)}"
        for name, ours, theirs in powered
        if ours.value + ours.error + theirs.error < 0.8 * theirs.value and args.quick
    ]
    for failure in failures:
        print(f"check failed: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
