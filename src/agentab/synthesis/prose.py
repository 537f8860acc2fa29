"""The prose of a synthesis: synthesis.md, and how the report writes a value, a gap, a cell.

The Markdown is rendered from `templates/synthesis.md.j2` with `report_context`; the describe_*
helpers are also what the command line prints.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict

from agentab import stats
from agentab.metrics import DIAGNOSTIC, RATE, Aggregate
from agentab.stats.strata import ALL, LINEAR, LOG
from agentab.synthesis.environment import environment_warnings
from agentab.synthesis.families import aa_warnings, behaviour_context, calibration_summary
from agentab.synthesis.figures.sequence_figure import sequence_svg
from agentab.synthesis.questions import out_of_reach, questions_context
from agentab.synthesis.runs.brick_use import brick_use_rows, brick_use_warnings
from agentab.synthesis.runs.integrity import changed_runs_warnings
from agentab.synthesis.runs.protected import protected_edit_warnings
from agentab.synthesis.runs.redone import redone_warnings
from agentab.synthesis.runs.results import STATUSES, RunRecord
from agentab.synthesis.tables import current_stamp
from agentab.synthesis.unscored import unscored_warnings
from agentab.synthesis.verdicts import HOLM_LEVEL, PENDING_NOTE, CellValue, Gap, SynthesisResult
from agentab.synthesis.wave_verdicts import stopping_context
from agentab.synthesis.waves import looks_warning


def _number(value: float) -> str:
    return f"{value:.4g}"


def _plain(value: float, digits: int = 3) -> str:
    """A signed number with `digits` significant digits; zero is written 0, never +0 or -0."""
    text = f"{value:+.{digits}g}"
    return "0" if float(text) == 0 else text


def _signed(value: float, kind: str) -> str:
    return f"{_plain(100 * value)} pp" if kind == RATE else _plain(value, 4)


def _interval(low: float, high: float, kind: str) -> str:
    if kind == RATE:
        return f"[{_plain(100 * low)}, {_plain(100 * high)}] pp"
    return f"[{_plain(low, 4)}, {_plain(high, 4)}]"


def describe_gap_figures(gap: Gap) -> str:
    """`+80 pp [+50, +100] pp` or `+1 [0, +1]`: a gap and its 95% interval, as the report writes
    (a median pooled as a geometric mean also as percentages of the reference's value)."""
    return f"{_difference(gap)} {_gap_interval(gap)}"


def _gap_interval(gap: Gap) -> str:
    if gap.sequence is not None:
        return _sequence_interval(gap)
    interval = _interval(gap.verdict.ci_low, gap.verdict.ci_high, gap.kind)
    return f"{interval} ({_relative_interval(gap)})" if gap.scale == LOG else interval


def _sequence_interval(gap: Gap) -> str:
    """A sequential gap's interval: its confidence sequence, a median's on the sign scale."""
    low, high = gap.verdict.ci_low, gap.verdict.ci_high
    if gap.kind == RATE:
        return _interval(low, high, RATE)
    return f"[{_plain(low, 3)}, {_plain(high, 3)}] of P(>) − P(<)"


def _difference(gap: Gap) -> str:
    """The gap in its unit, and for a median pooled on the log scale also as a percentage of
    the reference's value: the factor the verdict was read on."""
    text = _signed(gap.verdict.gap, gap.kind)
    return f"{text} ({_percent(gap.verdict.gap / gap.value_ref)})" if gap.scale == LOG else text


def _relative_interval(gap: Gap) -> str:
    low, high = (end / gap.value_ref for end in (gap.verdict.ci_low, gap.verdict.ci_high))
    return f"{_percent(low)} to {_percent(high)}"


def _percent(share: float) -> str:
    return f"{_plain(100 * share)}%"


def _p_value(p: float | None) -> str:
    # With DRAWS draws the smallest non-zero p is 2 / DRAWS. None: outside the Holm family.
    if p is None:
        return "—"
    return f"< {2 / stats.DRAWS:g}" if p == 0 else f"{p:.3g}"


def count_text(value: float) -> str:
    """A whole count with thin-space thousands separators: 228 824."""
    return f"{value:,.0f}".replace(",", "\u202f")


def _rate(agg: Aggregate) -> str:
    return f"{agg.k}/{agg.n} ({100 * agg.value:.0f}%)"


def _median(agg: Aggregate) -> str:
    return f"{_number(agg.value)} (IQR {_number(agg.low)}–{_number(agg.high)}, n = {agg.n})"


def _pooled(agg: Aggregate, scale: str = LINEAR) -> str:
    """A cell's pooled value over several tasks: the mean of its tasks' statistics (of a median
    of positive values, the geometric mean)."""
    if agg.kind == RATE:
        return f"{100 * agg.value:.0f}% (mean over tasks; {agg.k}/{agg.n} runs)"
    mean = "geometric mean" if scale == LOG else "mean"
    return f"{_number(agg.value)} ({mean} of the tasks' medians, n = {agg.n})"


def describe_value(row: CellValue) -> str:
    agg = row.aggregate
    if agg.n == 0 and row.pending:
        return f"pending ({row.pending} run{'s' if row.pending != 1 else ''})"
    if agg.kind == DIAGNOSTIC:
        text = f"per run only (n = {agg.n})"
    elif agg.n == 0:
        text = "no valid value"
    elif agg.value is None:
        text = f"no pooled value: a task has no valid value (n = {agg.n})"
    elif not agg.dispersion:
        text = _pooled(agg, row.scale)
    elif agg.kind == RATE:
        text = _rate(agg)
    else:
        text = _median(agg)
    return f"{text}; {row.pending} pending" if row.pending else text


def describe_isolated(row: CellValue) -> str:
    agg = row.aggregate
    if not agg.dispersion:
        return describe_value(row)
    if agg.kind == RATE:
        return f"{_rate(agg)}, Wilson 95% interval {100 * agg.low:.0f}%–{100 * agg.high:.0f}%"
    return f"median {_median(agg)}"


def describe_gap_plainly(gap: Gap, values: dict) -> str:
    direction = "higher" if gap.verdict.gap > 0 else "lower"
    mine, theirs = (
        values[gap.cell, gap.metric].aggregate,
        values[gap.reference, gap.metric].aggregate,
    )
    if not mine.dispersion:  # pooled over several tasks
        compared = f"{_pooled(mine, gap.scale)} against {_pooled(theirs, gap.scale)}"
        statistic = "rate" if gap.kind == RATE else "median"
    elif gap.kind == RATE:
        compared = f"{mine.k}/{mine.n} runs against {theirs.k}/{theirs.n}"
        statistic = "rate"
    else:
        compared = f"{_median(mine)} against {_median(theirs)}"
        statistic = "median"
    holm = (
        "it still holds after Holm's adjustment"
        if gap.survives_holm
        else f"its Holm-adjusted p ({_p_value(gap.p_holm)}) is not below {HOLM_LEVEL}, so count "
        "it among the gaps that chance alone could produce in a table this size"
    )
    return (
        f"In `{gap.cell}`, the {statistic} of `{gap.metric}` is {direction} than in "
        f"`{gap.reference}`: {compared}, a gap of {_difference(gap)} "
        f"(95% interval {_gap_interval(gap)}); "
        f"{holm}."
    )


def describe_delta(cell) -> str:
    if cell.is_baseline:
        return "baseline"
    if getattr(cell, "is_aa", False):
        return "A/A: the reference once more, with its own seeds"
    return ", ".join(f"{dimension} = {value}" for dimension, value in cell.delta.items()) or "—"


def describe_settings(cell) -> str:
    parts = []
    for key, value in cell.settings.items():
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        shown = " ".join(shown.split())
        parts.append(f"{key}: {shown if len(shown) <= 60 else shown[:59] + '…'}")
    return "; ".join(parts)


PROVENANCE_FIELDS = ("harness", "harness_version", "provider", "model", "thinking", "etalon_sha")


def provenance_rows(result: SynthesisResult, scenario) -> list[dict]:
    """Per cell, every distinct value each provenance field took across its runs."""
    seen: dict[tuple[str, str], set] = defaultdict(set)
    for run in result.runs:
        provenance, cell = run.provenance, run.cell
        for name in PROVENANCE_FIELDS:
            value = provenance.get(name)
            if value is not None and value != "":
                seen[cell, name].add(str(value))
    return [
        {"cell": cell.name}
        | {name: ", ".join(sorted(seen[cell.name, name])) or "—" for name in PROVENANCE_FIELDS}
        for cell in scenario.cells
    ]


def usage_totals(runs: list[RunRecord]) -> dict:
    """Time, tokens and cost over the runs, in one pass (each total summed as sum() sums)."""
    parts: dict[str, list] = {"duration_s": [], "input_tokens": [], "output_tokens": []}
    costs, priced_runs = [], 0
    for run in runs:
        provenance = run.provenance
        tokens = provenance.get("tokens") or {}
        for name, value in (
            ("duration_s", provenance.get("duration_s")),
            ("input_tokens", tokens.get("input")),
            ("output_tokens", tokens.get("output")),
        ):
            if _is_number(value):
                parts[name].append(value)
        # The offline model costs nothing, unless its policy sets a price (to try a budget).
        if provenance.get("provider") != "offline" or (provenance.get("cost_usd") or 0) > 0:
            priced_runs += 1
            if _is_number(provenance.get("cost_usd")):
                costs.append(provenance["cost_usd"])
    return {name: sum(values) for name, values in parts.items()} | {
        "cost_usd": sum(costs),
        "priced_runs": priced_runs,
    }


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def markdown_table_text(value: object) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(value).split()).replace("|", "\\|")


def render_markdown(result: SynthesisResult, scenario) -> str:
    return synthesis_template().render(report_context(result, scenario))


@functools.cache
def synthesis_template():
    """synthesis.md's template, loaded once a process."""
    from agentab.rendering import template_environment

    environment = template_environment(keep_trailing_newline=True, autoescape=False)  # Markdown
    environment.filters["cell"] = markdown_table_text
    return environment.get_template("synthesis.md.j2")


def treatment_warnings(result: SynthesisResult, run_warnings: list[str]) -> list[str]:
    """The warnings first in synthesis.md: the A/A copy's established gaps, then the runs'."""
    return aa_warnings(result, describe_gap_figures) + run_warnings


def run_warnings(result: SynthesisResult, scenario) -> list[str]:
    """What the runs alone warn of: unconfined runs, environments, protected edits, unused
    bricks, changed files, earlier looks, and treatments that did not reach the model, by their
    receipts (docs/receipts.md)."""
    undelivered: Counter = Counter()
    prints: dict[str, set] = defaultdict(set)
    for run in result.runs:
        receipt = run.receipt or {}
        if receipt.get("delivered") is False:
            undelivered[run.cell] += 1
        if receipt.get("fingerprint"):
            prints[run.cell].add(receipt["fingerprint"])
    warnings = unconfined_warning(result) + environment_warnings(result, scenario)
    warnings += protected_edit_warnings(result, scenario) + brick_use_warnings(result, scenario)
    warnings += changed_runs_warnings(result) + looks_warning(result.looks)
    warnings += unscored_warnings(result, scenario) + redone_warnings(result)
    warnings += [
        f"`{cell.name}`: {undelivered[cell.name]} run{'s' * (undelivered[cell.name] != 1)} "
        "whose treatment did not reach the model (invalid: `treatment-not-delivered`)"
        for cell in scenario.cells
        if undelivered[cell.name]
    ]
    reference = prints.get(scenario.reference, set())
    warnings += [
        f"`{cell.name}`: its requests reached the model identical to the reference's "
        f"(`{scenario.reference}`: same system prompt, tools, model and reasoning setting): "
        "its delta never arrived, whatever its settings say"
        for cell in scenario.cells
        if cell.name != scenario.reference
        and not getattr(
            cell, "is_aa", False
        )  # identical to the reference is what the A/A copy is for
        and reference
        and prints.get(cell.name)
        and prints[cell.name] <= reference
    ]
    return warnings


def limits_line(result: SynthesisResult, scenario) -> str:
    """What each run could take of the machine, and how the machines that ran them enforced it
    (a cluster's nodes may differ): part of what was measured."""
    if scenario.limits is None:
        return ""
    declared = ", ".join(f"{key} {value}" for key, value in scenario.limits.as_dict().items())
    ways: Counter = Counter()
    for run in result.runs:
        enforced = (run.provenance.get("limits") or {}).get("enforced") or {}
        if enforced:
            ways["; ".join(f"{key}: {how}" for key, how in sorted(enforced.items()))] += 1
    line = f"**Limits** of every run (`[protocol] limits`): {declared}."
    if len(ways) == 1:
        line += f" Enforced by {next(iter(ways))}."
    elif ways:
        line += (
            " Enforced differently across the runs: "
            + "; or ".join(f"{count} runs by {how}" for how, count in ways.most_common())
            + "."
        )
    return line


def unconfined_warning(result: SynthesisResult) -> list[str]:
    """Runs made with `confinement: none` (config/config.yaml): said first, whatever else."""
    count = sum(1 for run in result.runs if run.provenance.get("confinement") == "none")
    if not count:
        return []
    return [
        f"{count} run{'s' * (count != 1)} ran unconfined (`confinement: none`): the agent and "
        "the validator scripts could read and write this machine's files, other runs' and the "
        "validators' included; these numbers hold only as far as the agent is trusted"
    ]


def run_facts(result: SynthesisResult, scenario) -> dict:
    """What synthesis.md says of the runs alone, no verdict needed."""
    counts = result.status_counts()
    status_by_cell = Counter((run.cell, run.status) for run in result.runs)
    missing_by_cell = Counter(missing.cell for missing in result.missing)
    usage = usage_totals(result.runs)
    return {
        "limits": limits_line(result, scenario),
        "run_warnings": run_warnings(result, scenario),
        "bricks": brick_use_rows(result, scenario),
        "counts": {status: counts.get(status, 0) for status in STATUSES},
        "matrix": [
            {
                "cell": cell,
                "delta": describe_delta(cell),
                "settings": describe_settings(cell),
                "is_reference": cell.name == scenario.reference,
                **{status: status_by_cell.get((cell.name, status), 0) for status in STATUSES},
                "missing": missing_by_cell.get(cell.name, 0),
            }
            for cell in scenario.cells
        ],
        "invalid": group_reasons(result.runs, "invalid"),
        "failed": group_reasons(result.runs, "failed"),
        "provenance": provenance_rows(result, scenario),
        "usage": {
            "runs": len(result.runs),
            "duration_s": count_text(usage["duration_s"]),
            "input_tokens": count_text(usage["input_tokens"]),
            "output_tokens": count_text(usage["output_tokens"]),
            "cost_usd": f"{usage['cost_usd']:.2f}",
            "priced_runs": usage["priced_runs"],
        },
    }


def report_context(result: SynthesisResult, scenario) -> dict:
    facts = run_facts(result, scenario)
    values = {(row.cell, row.metric): row for row in result.cell_values if row.task == ALL}
    every_value = {(row.cell, row.metric, row.task): row for row in result.cell_values}
    isolated = [
        row for row in result.cell_values if row.note.startswith("isolated") and row.aggregate.n
    ]
    pending = Counter()
    for row in result.cell_values:
        pending[row.metric] += row.pending
    most_waves = result.waves.most if result.waves else 0
    return {
        **{key: value for key, value in facts.items() if key != "run_warnings"},
        "warnings": treatment_warnings(result, facts["run_warnings"])
        + [text for text in [result.memo.get("stamp_change", "")] if text],
        "stamp": current_stamp(),
        "scenario": scenario,
        "stats": stats,
        "holm_level": HOLM_LEVEL,
        "expected_runs": expected_runs(result, scenario),
        "stopping": stopping_context(result, scenario),
        # One task, named or not, is one task: no per-task sections.
        "tasks": [task.name for task in scenario.tasks] if len(scenario.tasks) > 1 else [],
        "task_values": {
            (row.cell, row.metric, row.task): describe_value(row)
            for row in result.cell_values
            if row.task != ALL
        },
        "task_gaps": [gap_row(gap, every_value) for gap in result.task_gaps],
        "calibration": [gap_row(gap, every_value, most_waves) for gap in result.calibration],
        "calibration_summary": calibration_summary(result.calibration),
        "behaviour": behaviour_context(result, scenario, describe_gap_plainly),
        "pass_k": [pass_k_row(gap) for gap in result.pass_k],
        "metrics": [
            {
                "name": metric,
                "type": result.metric_types[metric],
                "pending_only": result.metric_types[metric].note == PENDING_NOTE,
            }
            for metric in scenario.metrics
        ],
        "values": {key: describe_value(row) for key, row in values.items()},
        "gaps": [gap_row(gap, every_value, most_waves) for gap in result.family],
        "established": [describe_gap_plainly(gap, values) for gap in result.established],
        "out_of_reach": out_of_reach(result, scenario),
        "gaps_figure": bool(result.family),
        "surviving_holm": sum(gap.survives_holm for gap in result.family),
        "isolated": [{"row": row, "text": describe_isolated(row)} for row in isolated],
        "pending": [
            {"metric": metric, "count": pending[metric], "forms": forms_filling(scenario, metric)}
            for metric in scenario.metrics
            if pending[metric]
        ],
        "missing": result.missing,
        "bad_files": result.bad_files,
        **questions_context(result, scenario),  # the judge against people, cost, tasks
    }


def expected_runs(result: SynthesisResult, scenario) -> int:
    """Every run planned; with sequential stopping, the runs of the waves each cell got."""
    if result.waves is None:
        return len(scenario.run_cells) * scenario.repetitions
    return sum(result.waves.runs_given(cell.name) for cell in scenario.run_cells)


def pass_k_row(gap: Gap) -> dict:
    """A pass^k gap as synthesis.md writes it: its values are shares of tasks, no counts."""
    return {
        "gap": gap,
        "value_cell": f"{100 * gap.value_cell:.0f}%",
        "value_ref": f"{100 * gap.value_ref:.0f}%",
        "difference": _difference(gap),
        "interval": _gap_interval(gap),
    }


def gap_row(gap: Gap, values: dict, most_waves: int = 0) -> dict:
    """A gap as the tables of synthesis.md and of the report write it; `values` holds every
    row of cells.csv by (cell, metric, task)."""
    return {
        "gap": gap,
        "value_cell": describe_value(values[gap.cell, gap.metric, gap.task]),
        "value_ref": describe_value(values[gap.reference, gap.metric, gap.task]),
        "difference": _difference(gap),
        "interval": _gap_interval(gap),
        "p": _p_value(gap.verdict.p),
        "p_holm": _p_value(gap.p_holm),
        # Sequential stopping: the gap's sequence over the waves, drawn for the report.
        "sequence_svg": sequence_svg(gap.sequence, most_waves) if gap.sequence else "",
    }


def forms_filling(scenario, metric: str) -> list[str]:
    """The form validators of the scenario that fill a metric."""
    return [
        name
        for name, spec in scenario.validators.items()
        if spec.mode == "form" and metric in (spec.options.get("fills") or [])
    ]


def group_reasons(runs: list[RunRecord], status: str) -> list[tuple[str, list[str]]]:
    """(reason, runs) pairs for the runs of a status, the most frequent reason first."""
    by_reason: dict[str, list[str]] = defaultdict(list)
    for run in runs:
        if run.status == status:
            for reason in run.problems or ["no reason recorded"]:
                by_reason[reason].append(run.run)
    return sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0]))
