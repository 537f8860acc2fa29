"""The synthesis: every table, figure and verdict, rebuilt from the per-run files alone.

`synthesize(results_dir)` reads the frozen scenario (`scenario.toml`: cells, reference, metric
contract) and every `runs/<slug>/r<NN>/measures.json`, and writes `cells.csv`, `gaps.csv`,
`measures.csv`, `gaps.png`, `gaps.svg` and `synthesis.md`. It needs no agent, validator, network
or workflow engine, so a verdict can be rebuilt at any time. The same inputs give the same
CSV bytes: nothing here depends on time, on file system order or on the order gaps are computed.

A results folder is often partial (a stubborn fault, a run still going). The synthesis then
says which runs are missing, and a measures.json that cannot be read is listed with its path
and its problem; it never stops the others from counting.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agentab import stats
from agentab.errors import AgentabError, problem
from agentab.measures import run_id
from agentab.metrics import DIAGNOSTIC, MEDIAN, RATE, Aggregate, MetricType, aggregate, metric_type

STATUSES = ("valid", "invalid", "failed")
HOLM_LEVEL = 0.05
# Threads that resample groups; numpy draws and sorts without holding the interpreter lock.
WORKERS = max(1, min(4, os.cpu_count() or 1))
CELLS_COLUMNS = [
    "cell", "metric", "type", "n", "k", "value",
    "dispersion", "dispersion_low", "dispersion_high", "pending", "note",
]  # fmt: skip
GAPS_COLUMNS = [
    "cell", "reference", "metric", "n_cell", "n_ref", "value_cell", "value_ref",
    "gap", "ci_low", "ci_high", "p", "p_holm", "verdict",
]  # fmt: skip
MEASURES_COLUMNS = ["cell", "rep", "run", "status", "metric", "role", "value", "pending"]
MEASURES_FILE = "measures.json"
PENDING_NOTE = "no value yet: pending a human form in every valid run"


@dataclass(frozen=True)
class RunRecord:
    """One run's measures.json, checked."""

    cell: str
    rep: int
    run: str
    status: str
    metrics: dict
    extra: dict
    pending: list[str]
    problems: list[str]
    provenance: dict


@dataclass(frozen=True)
class BadFile:
    path: str  # relative to the results folder
    message: str


@dataclass(frozen=True)
class MissingRun:
    cell: str
    rep: int
    path: str  # the run folder, relative to the results folder


@dataclass(frozen=True)
class CellValue:
    cell: str
    metric: str
    aggregate: Aggregate
    pending: int
    note: str = ""


@dataclass(frozen=True)
class Gap:
    cell: str
    reference: str
    metric: str
    kind: str
    n_cell: int
    n_ref: int
    value_cell: float
    value_ref: float
    verdict: stats.GapVerdict
    p_holm: float

    @property
    def survives_holm(self) -> bool:
        return self.verdict.is_established and self.p_holm < HOLM_LEVEL


@dataclass
class SynthesisResult:
    """What was rebuilt, and what a reader should know about the inputs."""

    results_dir: Path
    scenario_name: str
    outputs: dict[str, Path]
    runs: list[RunRecord]
    metric_types: dict[str, MetricType]
    cell_values: list[CellValue]
    gaps: list[Gap]
    missing: list[MissingRun] = field(default_factory=list)
    bad_files: list[BadFile] = field(default_factory=list)

    @property
    def established(self) -> list[Gap]:
        return [gap for gap in self.gaps if gap.verdict.is_established]

    def status_counts(self) -> Counter:
        return Counter(run.status for run in self.runs)


# ----------------------------------------------------------------------------- reading


def load_frozen_scenario(results_dir: Path):
    """The scenario exactly as it was run: cells, reference and metric contract."""
    # Imported here so that the statistics stay importable on their own.
    from agentab.scenario import load_scenario

    if not results_dir.is_dir():
        raise AgentabError(
            problem(
                results_dir,
                "",
                "no such results folder",
                "pass the folder a scenario's runs were written to, e.g. results/<scenario name>",
            )
        )
    frozen = results_dir / "scenario.toml"
    if not frozen.is_file():
        raise AgentabError(
            problem(
                frozen,
                "",
                "the frozen scenario is missing; the synthesis reads cells, reference and "
                "metric contract from it",
                "copy the scenario that was run to this path, unchanged",
            )
        )
    return load_scenario(frozen, check_etalon=False, check_bricks=False)


def find_measures_files(results_dir: Path) -> list[Path]:
    """Every `runs/<slug>/r*/measures.json`, in path order (the order of `sorted(glob(...))`)."""
    return [
        results_dir / "runs" / slug / rep / MEASURES_FILE
        for slug, rep in _run_folders(results_dir)
        if (results_dir / "runs" / slug / rep / MEASURES_FILE).exists()
    ]


def _run_folders(results_dir: Path) -> list[tuple[str, str]]:
    """(slug, folder) pairs of every `runs/<slug>/r*` folder, sorted as their paths sort.

    A directory scan rather than a glob: with thousands of runs, building and matching a Path
    per candidate is a noticeable share of a synthesis. A folder may hold no measures.json.
    """
    runs = os.path.join(results_dir, "runs")
    found = [
        (slug, rep)
        for slug in _subfolders(runs)
        for rep in _subfolders(os.path.join(runs, slug), prefix="r")
    ]
    found.sort()
    return found


def _subfolders(folder: str, prefix: str = "") -> list[str]:
    """Names of the visible folders in a folder (a glob's `*` skips hidden names)."""
    try:
        with os.scandir(folder) as entries:
            return [
                entry.name
                for entry in entries
                if entry.name.startswith(prefix)
                and not entry.name.startswith(".")
                and entry.is_dir()
            ]
    except (FileNotFoundError, NotADirectoryError):
        return []


def read_run(path: Path, results_dir: Path, cells_by_name: dict) -> RunRecord | BadFile:
    """A checked RunRecord, or a BadFile saying what is wrong with it."""
    relative = Path(path).relative_to(results_dir).as_posix()
    try:
        return _read_run(str(path), relative, cells_by_name)
    except _NoFile:
        return BadFile(relative, "cannot be read: no such file")


class _NoFile(Exception):
    """The run folder holds no measures.json."""


def _read_run(path: str, relative: str, cells_by_name: dict) -> RunRecord | BadFile:
    """`read_run`; raises _NoFile when there is no file at `path` at all."""
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8")
        data = json.loads(text)
    except FileNotFoundError:
        raise _NoFile(path) from None
    except (OSError, UnicodeDecodeError) as error:
        return BadFile(relative, f"cannot be read: {error}")
    except json.JSONDecodeError as error:
        return BadFile(relative, f"is not valid JSON: {error}")
    if not isinstance(data, dict):
        return BadFile(relative, "is not a JSON object")
    problem_text = _structure_problem(data, cells_by_name)
    if problem_text:
        return BadFile(relative, problem_text)
    cell = cells_by_name[data["cell"]]
    run = run_id(cell.slug, data["rep"])
    expected = f"runs/{run}"
    if relative.rpartition("/")[0] != expected:
        return BadFile(
            relative,
            f"is for cell {data['cell']!r} repetition {data['rep']}, which belongs in {expected}/",
        )
    return RunRecord(
        cell=data["cell"],
        rep=data["rep"],
        run=str(data.get("run") or run),
        status=data["status"],
        metrics=data.get("metrics") or {},
        extra=data.get("extra") or {},
        pending=list(data.get("pending") or []),
        problems=[str(item) for item in data.get("problems") or []],
        provenance=data.get("provenance") or {},
    )


def _structure_problem(data: dict, cells_by_name: dict) -> str:
    cell, rep, status = data.get("cell"), data.get("rep"), data.get("status")
    if not isinstance(cell, str):
        return "has no 'cell' name"
    if cell not in cells_by_name:
        known = ", ".join(repr(name) for name in cells_by_name)
        return f"names cell {cell!r}, which the frozen scenario does not have (it has {known})"
    if not isinstance(rep, int) or isinstance(rep, bool) or rep < 1:
        return "has no 'rep' (an integer >= 1)"
    if status not in STATUSES:
        return f"has status {status!r}; expected one of {', '.join(STATUSES)}"
    for key, kind in (("metrics", dict), ("extra", dict), ("pending", list), ("problems", list)):
        if key in data and data[key] is not None and not isinstance(data[key], kind):
            return f"has a '{key}' that is not a JSON {'object' if kind is dict else 'array'}"
    if "provenance" in data and not isinstance(data["provenance"], dict | None):
        return "has a 'provenance' that is not a JSON object"
    return ""


def read_runs(results_dir: Path, scenario) -> tuple[list[RunRecord], list[BadFile]]:
    runs, bad, _ = _read_all_runs(Path(results_dir), scenario)
    return runs, bad


def _read_all_runs(results_dir: Path, scenario) -> tuple[list[RunRecord], list[BadFile], set[str]]:
    """The checked runs, the bad files, and every run folder that holds a measures.json."""
    cells_by_name = {cell.name: cell for cell in scenario.cells}
    order = {cell.name: index for index, cell in enumerate(scenario.cells)}
    root = str(results_dir)
    runs, bad, present = [], [], set()
    for slug, rep in _run_folders(results_dir):
        relative = f"runs/{slug}/{rep}"
        try:
            record = _read_run(
                os.path.join(root, "runs", slug, rep, MEASURES_FILE),
                f"{relative}/{MEASURES_FILE}",
                cells_by_name,
            )
        except _NoFile:
            continue
        present.add(relative)
        (bad if isinstance(record, BadFile) else runs).append(record)
    runs.sort(key=lambda run: (order[run.cell], run.rep))
    return runs, bad, present


def missing_runs(results_dir: Path, scenario, present: set[str] | None = None) -> list[MissingRun]:
    """Expected runs (every cell x repetitions 1..N) with no measures.json at all.

    `present` is the set of run folders (`runs/<slug>/r<NN>`) known to hold one, when the caller
    has just listed them; otherwise the file system is asked run by run.
    """
    missing = []
    for cell in scenario.cells:
        for rep in range(1, scenario.repetitions + 1):
            folder = f"runs/{run_id(cell.slug, rep)}"
            if present is not None:
                found = folder in present
            else:
                found = (Path(results_dir) / folder / MEASURES_FILE).exists()
            if not found:
                missing.append(MissingRun(cell.name, rep, folder))
    return missing


# --------------------------------------------------------------------------- computing


@dataclass(frozen=True)
class ScoredValues:
    """Each cell's values of each contract metric over its valid runs, gathered in one pass.

    A metric pending a human form has no value yet: it is counted apart, and the run stays valid.
    """

    values: dict[tuple[str, str], list]
    pending: Counter

    @classmethod
    def of(cls, runs: list[RunRecord], metrics: list[str]) -> ScoredValues:
        values: dict[tuple[str, str], list] = defaultdict(list)
        pending: Counter = Counter()
        for run in runs:
            if run.status != "valid":
                continue
            for metric in metrics:
                if metric in run.pending:
                    pending[run.cell, metric] += 1
                elif metric in run.metrics:
                    values[run.cell, metric].append(run.metrics[metric])
        return cls(dict(values), pending)

    def get(self, cell: str, metric: str) -> list:
        return self.values.get((cell, metric), [])


def decide_metric_types(scored: ScoredValues, scenario) -> dict[str, MetricType]:
    types = {}
    for metric in scenario.metrics:
        values = [value for cell in scenario.cells for value in scored.get(cell.name, metric)]
        waiting = sum(scored.pending[cell.name, metric] for cell in scenario.cells)
        if not values and waiting:
            # Not a list or a string: a form nobody has filled yet. Its type is not known.
            types[metric] = MetricType(DIAGNOSTIC, PENDING_NOTE)
        else:
            types[metric] = metric_type(values)
    return types


def compute_cell_values(scored: ScoredValues, scenario, types) -> list[CellValue]:
    single_cell = len(scenario.cells) == 1
    rows = []
    for cell in scenario.cells:
        for metric in scenario.metrics:
            kind = types[metric].kind
            note = types[metric].note
            if kind != DIAGNOSTIC and (single_cell or not scored.get(scenario.reference, metric)):
                note = "isolated measurement: no verdict"
            rows.append(
                CellValue(
                    cell=cell.name,
                    metric=metric,
                    aggregate=aggregate(kind, scored.get(cell.name, metric)),
                    pending=scored.pending[cell.name, metric],
                    note=note,
                )
            )
    return rows


def compute_gaps(
    scored: ScoredValues,
    scenario,
    types,
    cell_values: list[CellValue],
    meanwhile: Callable[[], object] | None = None,
) -> list[Gap]:
    """Every gap against the reference, with its verdict, Holm-adjusted over the whole table.

    Each group (a cell's values of a metric) is resampled once, on worker threads: numpy
    releases the interpreter lock while it draws and sorts, and each group has its own random
    stream (`stats.generator_for`), so neither the threads nor their order change any draw.
    `meanwhile`, if given, runs on the calling thread while the groups are being resampled.
    """
    if len(scenario.cells) < 2:
        if meanwhile is not None:
            meanwhile()
        return []
    by_key = {(row.cell, row.metric): row.aggregate for row in cell_values}
    judged = []
    for cell in scenario.cells:
        if cell.name == scenario.reference:
            continue
        for metric in scenario.metrics:
            if types[metric].kind not in (RATE, MEDIAN):
                continue
            mine, theirs = by_key[cell.name, metric], by_key[scenario.reference, metric]
            if mine.n == 0 or theirs.n == 0:
                continue
            judged.append((cell.name, metric, mine, theirs))
    groups = list(
        dict.fromkeys(
            group
            for cell, metric, _, _ in judged
            for group in ((scenario.reference, metric), (cell, metric))
        )
    )

    def resample(group: tuple[str, str]) -> np.ndarray:
        cell, metric = group
        rng = stats.generator_for(stats.group_key(metric, cell))
        return stats.resample_statistic(types[metric].kind, scored.get(cell, metric), rng)

    gap_draws = np.empty((len(judged), stats.DRAWS))
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        # The costliest groups first, so that no thread is left with a long one at the end.
        by_cost = sorted(groups, key=lambda group: -_resampling_cost(scored, types, group))
        futures = {group: pool.submit(resample, group) for group in by_cost}
        if meanwhile is not None:
            meanwhile()
        for row, (cell, metric, _, _) in enumerate(judged):
            np.subtract(
                futures[cell, metric].result(),
                futures[scenario.reference, metric].result(),
                out=gap_draws[row],
            )
    verdicts = stats.verdicts_from_draws(
        [mine.value - theirs.value for _, _, mine, theirs in judged], gap_draws
    )
    adjusted = stats.holm([verdict.p for verdict in verdicts])
    return [
        Gap(
            cell=cell,
            reference=scenario.reference,
            metric=metric,
            kind=types[metric].kind,
            n_cell=mine.n,
            n_ref=theirs.n,
            value_cell=mine.value,
            value_ref=theirs.value,
            verdict=verdict,
            p_holm=p_holm,
        )
        for (cell, metric, mine, theirs), verdict, p_holm in zip(
            judged, verdicts, adjusted, strict=True
        )
    ]


def _resampling_cost(scored: ScoredValues, types, group: tuple[str, str]) -> int:
    """A rough rank of how long a group takes to resample: a median costs with its size."""
    cell, metric = group
    return len(scored.get(cell, metric)) if types[metric].kind == MEDIAN else 0


# ----------------------------------------------------------------------------- writing


def csv_number(value) -> str:
    """Full precision (repr) so that a reader can recompute every figure; empty when absent."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def write_csv(path: Path, columns: list[str], rows: list[list]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_number(value) for value in row])
    path.write_text(buffer.getvalue(), encoding="utf-8")


def write_text_csv(path: Path, columns: list[str], rows: list[list[str]]) -> None:
    """`write_csv` for rows that are already text."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")


def cells_rows(cell_values: list[CellValue]) -> list[list]:
    rows = []
    for row in cell_values:
        agg = row.aggregate
        rows.append(
            [
                row.cell,
                row.metric,
                agg.kind,
                agg.n,
                agg.k,
                agg.value,
                agg.dispersion,
                agg.low,
                agg.high,
                row.pending,
                row.note,
            ]
        )
    return rows


def gaps_rows(gaps: list[Gap]) -> list[list]:
    return [
        [
            gap.cell,
            gap.reference,
            gap.metric,
            gap.n_cell,
            gap.n_ref,
            gap.value_cell,
            gap.value_ref,
            gap.verdict.gap,
            gap.verdict.ci_low,
            gap.verdict.ci_high,
            gap.verdict.p,
            gap.p_holm,
            gap.verdict.verdict,
        ]
        for gap in gaps
    ]


def json_text(value) -> str:
    """A value as JSON text, so that `true`, `6` and `"6"` stay distinct in measures.csv."""
    # The common scalars directly: json.dumps per value is most of the time of a large table.
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float and math.isfinite(value):
        return repr(value)  # what json.dumps writes for a finite float
    return json.dumps(value, sort_keys=True)


def measures_rows(runs: list[RunRecord], contract: list[str]) -> list[list[str]]:
    """One row per run and metric: every contract metric (empty when absent), then the extras.

    The rows are already text, as they appear in measures.csv.
    """
    rows = []
    for run in runs:
        head = [run.cell, str(run.rep), run.run, run.status]
        metrics, pending = run.metrics, run.pending
        for metric in contract:
            value = json_text(metrics[metric]) if metric in metrics else ""
            flag = "true" if metric in pending else "false"
            rows.append([*head, metric, "contract", value, flag])
        for metric in sorted(run.extra):
            rows.append([*head, metric, "extra", json_text(run.extra[metric]), "false"])
    return rows


def synthesize(results_dir: Path) -> SynthesisResult:
    """Rebuild every output of a results folder from its frozen scenario and measures files."""
    results_dir = Path(results_dir)
    scenario = load_frozen_scenario(results_dir)
    runs, bad_files, present = _read_all_runs(results_dir, scenario)
    scored = ScoredValues.of(runs, scenario.metrics)
    types = decide_metric_types(scored, scenario)
    cell_values = compute_cell_values(scored, scenario, types)
    result = SynthesisResult(
        results_dir=results_dir,
        scenario_name=scenario.name,
        outputs=output_paths(results_dir),
        runs=runs,
        metric_types=types,
        cell_values=cell_values,
        gaps=[],
        missing=missing_runs(results_dir, scenario, present),
        bad_files=bad_files,
    )

    def meanwhile() -> None:
        # What needs no verdict is written while the groups are resampled.
        write_run_tables(result, scenario)
        _import_renderers()

    result.gaps = compute_gaps(scored, scenario, types, cell_values, meanwhile=meanwhile)
    write_verdict_outputs(result, scenario)
    return result


def output_paths(out: Path) -> dict[str, Path]:
    names = ("cells.csv", "gaps.csv", "measures.csv", "gaps.png", "gaps.svg", "synthesis.md")
    return {name: out / name for name in names}


def write_outputs(result: SynthesisResult, scenario) -> None:
    result.outputs = output_paths(result.results_dir)
    write_run_tables(result, scenario)
    write_verdict_outputs(result, scenario)


def write_run_tables(result: SynthesisResult, scenario) -> None:
    """cells.csv and measures.csv: they do not depend on any verdict."""
    write_csv(result.outputs["cells.csv"], CELLS_COLUMNS, cells_rows(result.cell_values))
    write_text_csv(
        result.outputs["measures.csv"],
        MEASURES_COLUMNS,
        measures_rows(result.runs, scenario.metrics),
    )


def write_verdict_outputs(result: SynthesisResult, scenario) -> None:
    """gaps.csv, the figure and the report."""
    write_csv(result.outputs["gaps.csv"], GAPS_COLUMNS, gaps_rows(result.gaps))
    render_figure(result, result.outputs["gaps.png"], result.outputs["gaps.svg"])
    result.outputs["synthesis.md"].write_text(render_markdown(result, scenario), encoding="utf-8")


def _import_renderers() -> None:
    """Import what the figure and the report need, ahead of their use (it takes a while)."""
    import jinja2  # noqa: F401
    from matplotlib import figure  # noqa: F401
    from matplotlib.backends import backend_agg, backend_svg  # noqa: F401


def group_reasons(runs: list[RunRecord], status: str) -> list[tuple[str, list[str]]]:
    """(reason, runs) pairs for the runs of a status, the most frequent reason first."""
    by_reason: dict[str, list[str]] = defaultdict(list)
    for run in runs:
        if run.status == status:
            for reason in run.problems or ["no reason recorded"]:
                by_reason[reason].append(run.run)
    return sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0]))


# ---------------------------------------------------------------------------- the figure

ESTABLISHED_COLOUR = "#1f4e9c"
INCONCLUSIVE_COLOUR = "#8a8a8a"
# A fixed salt and no date make the SVG the same bytes for the same gaps; text stays text
# (searchable, and much faster to write than one path per glyph).
SVG_HASH_SALT = "agentab-gaps"


# Figure geometry in inches, laid out by hand: a layout engine measures every label several
# times, which is most of the cost of a figure with hundreds of gaps.
ROW_IN, PANEL_HEAD_IN, PANEL_GAP_IN, LEGEND_IN, TOP_IN = 0.28, 0.5, 0.35, 0.75, 0.15
PLOT_WIDTH_IN, LABEL_CHAR_IN = 5.5, 0.07
MAX_PNG_PIXELS = 4000


def render_figure(result: SynthesisResult, png: Path, svg: Path) -> None:
    """A forest plot of every gap with its interval, one panel per metric, established filled."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    by_metric: dict[str, list[Gap]] = defaultdict(list)
    for gap in result.gaps:
        by_metric[gap.metric].append(gap)
    longest_label = max((len(gap.cell) for gap in result.gaps), default=10)
    left_in = min(3.5, 0.3 + LABEL_CHAR_IN * longest_label)
    panel_heights = [PANEL_HEAD_IN + ROW_IN * (len(gaps) + 1) for gaps in by_metric.values()]
    height_in = TOP_IN + sum(panel_heights) + PANEL_GAP_IN * len(panel_heights) + LEGEND_IN
    width_in = left_in + PLOT_WIDTH_IN + 0.3
    with matplotlib.rc_context(
        {"svg.hashsalt": SVG_HASH_SALT, "svg.fonttype": "none", "font.size": 9}
    ):
        figure = Figure(figsize=(width_in, max(height_in, 1.5)))
        FigureCanvasAgg(figure)
        if not by_metric:
            figure.text(0.5, 0.5, "no gap to show (one cell, or no scored metric with values)",
                        ha="center", va="center")  # fmt: skip
        top = height_in - TOP_IN
        for (metric, gaps), panel_in in zip(by_metric.items(), panel_heights, strict=True):
            plot_in = panel_in - PANEL_HEAD_IN
            bottom = top - PANEL_HEAD_IN - plot_in
            axes = figure.add_axes(
                (
                    left_in / width_in,
                    bottom / height_in,
                    PLOT_WIDTH_IN / width_in,
                    plot_in / height_in,
                )
            )
            _draw_panel(axes, metric, gaps)
            top = bottom - PANEL_GAP_IN
        if by_metric:
            figure.legend(
                handles=[
                    Line2D([], [], marker="o", color=ESTABLISHED_COLOUR, label="established"),
                    Line2D(
                        [],
                        [],
                        marker="o",
                        color=INCONCLUSIVE_COLOUR,
                        markerfacecolor="white",
                        label="inconclusive",
                    ),  # fmt: skip
                ],
                loc="lower center",
                ncols=2,
                frameon=False,
                title=f"gap to the reference {result.gaps[0].reference!r}, "
                f"95% bootstrap interval ({_count(stats.DRAWS)} draws)",
            )
        # A very tall figure (hundreds of gaps) is read in the SVG; its PNG stays a preview.
        dpi = max(30, min(100, int(MAX_PNG_PIXELS / height_in)))
        figure.savefig(png, format="png", dpi=dpi, metadata={"Software": None})
        figure.savefig(svg, format="svg", metadata={"Date": None})


def _draw_panel(axes, metric: str, gaps: list[Gap]) -> None:
    # A rate is drawn in percentage points, as the report writes it.
    scale = 100.0 if gaps[0].kind == RATE else 1.0
    rows = np.arange(len(gaps))[::-1]  # the first cell on top
    for established in (False, True):
        chosen = [i for i, gap in enumerate(gaps) if gap.verdict.is_established == established]
        if not chosen:
            continue
        colour = ESTABLISHED_COLOUR if established else INCONCLUSIVE_COLOUR
        lows = [scale * gaps[i].verdict.ci_low for i in chosen]
        highs = [scale * gaps[i].verdict.ci_high for i in chosen]
        axes.hlines(rows[chosen], lows, highs, color=colour, linewidth=2)
        axes.scatter([scale * gaps[i].verdict.gap for i in chosen], rows[chosen], s=36, zorder=3,
                     color=colour if established else "white", edgecolors=colour)  # fmt: skip
    axes.axvline(0, color="black", linewidth=0.8)
    axes.set_ylim(-0.7, len(gaps) - 0.3)
    # Row labels and the title as plain text: a tick per row costs several artists and a layout
    # pass each, which is most of the time of a figure with hundreds of gaps.
    axes.set_yticks([])
    labels = axes.get_yaxis_transform()
    for row, gap in zip(rows, gaps, strict=True):
        axes.text(-0.015, row, gap.cell, transform=labels, ha="right", va="center")
    unit = "rate, percentage points" if gaps[0].kind == RATE else "median"
    axes.text(0, 1.04, f"{metric}: difference in {unit}", transform=axes.transAxes,
              ha="left", va="bottom", fontsize=10)  # fmt: skip
    axes.grid(axis="x", color="#dddddd", linewidth=0.6)


# --------------------------------------------------------------------------- the report


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
    """`+80 pp [+50, +100] pp` or `+1 [0, +1]`: a gap and its 95% interval, as the report writes."""
    interval = _interval(gap.verdict.ci_low, gap.verdict.ci_high, gap.kind)
    return f"{_signed(gap.verdict.gap, gap.kind)} {interval}"


def _p_value(p: float) -> str:
    # With DRAWS draws the smallest non-zero p is 2 / DRAWS.
    return f"< {2 / stats.DRAWS:g}" if p == 0 else f"{p:.3g}"


def _count(value: float) -> str:
    """A whole count with thin-space thousands separators: 228 824."""
    return f"{value:,.0f}".replace(",", "\u202f")


def _rate(agg: Aggregate) -> str:
    return f"{agg.k}/{agg.n} ({100 * agg.value:.0f}%)"


def _median(agg: Aggregate) -> str:
    return f"{_number(agg.value)} (IQR {_number(agg.low)}–{_number(agg.high)}, n = {agg.n})"


def describe_value(row: CellValue) -> str:
    agg = row.aggregate
    if agg.n == 0 and row.pending:
        return f"pending ({row.pending} run{'s' if row.pending != 1 else ''})"
    if agg.kind == DIAGNOSTIC:
        text = f"per run only (n = {agg.n})"
    elif agg.n == 0:
        text = "no valid value"
    elif agg.kind == RATE:
        text = _rate(agg)
    else:
        text = _median(agg)
    return f"{text}; {row.pending} pending" if row.pending else text


def describe_isolated(row: CellValue) -> str:
    agg = row.aggregate
    if agg.kind == RATE:
        return f"{_rate(agg)}, Wilson 95% interval {100 * agg.low:.0f}%–{100 * agg.high:.0f}%"
    return f"median {_median(agg)}"


def describe_gap_plainly(gap: Gap, values: dict) -> str:
    direction = "higher" if gap.verdict.gap > 0 else "lower"
    mine, theirs = (
        values[gap.cell, gap.metric].aggregate,
        values[gap.reference, gap.metric].aggregate,
    )
    if gap.kind == RATE:
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
        f"`{gap.reference}`: {compared}, a gap of {_signed(gap.verdict.gap, gap.kind)} "
        f"(95% interval {_interval(gap.verdict.ci_low, gap.verdict.ci_high, gap.kind)}); "
        f"{holm}."
    )


def describe_delta(cell) -> str:
    if cell.is_baseline:
        return "baseline"
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
        for name in PROVENANCE_FIELDS:
            if run.provenance.get(name) not in (None, ""):
                seen[run.cell, name].add(str(run.provenance[name]))
    return [
        {"cell": cell.name}
        | {name: ", ".join(sorted(seen[cell.name, name])) or "—" for name in PROVENANCE_FIELDS}
        for cell in scenario.cells
    ]


def usage_totals(runs: list[RunRecord]) -> dict:
    def total(getter, among=runs) -> float:
        found = (getter(run.provenance) for run in among)
        return sum(v for v in found if isinstance(v, int | float) and not isinstance(v, bool))

    # The offline model costs nothing, whatever price its harness was told.
    priced = [run for run in runs if run.provenance.get("provider") != "offline"]
    return {
        "duration_s": total(lambda p: p.get("duration_s")),
        "input_tokens": total(lambda p: (p.get("tokens") or {}).get("input")),
        "output_tokens": total(lambda p: (p.get("tokens") or {}).get("output")),
        "cost_usd": total(lambda p: p.get("cost_usd"), priced),
        "priced_runs": len(priced),
    }


def markdown_table_text(value: object) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(value).split()).replace("|", "\\|")


def render_markdown(result: SynthesisResult, scenario) -> str:
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # Markdown, not HTML
    )
    environment.filters["cell"] = markdown_table_text
    return environment.get_template("synthesis.md.j2").render(report_context(result, scenario))


def report_context(result: SynthesisResult, scenario) -> dict:
    counts = result.status_counts()
    status_by_cell = Counter((run.cell, run.status) for run in result.runs)
    missing_by_cell = Counter(missing.cell for missing in result.missing)
    values = {(row.cell, row.metric): row for row in result.cell_values}
    isolated = [
        row for row in result.cell_values if row.note.startswith("isolated") and row.aggregate.n
    ]
    pending = Counter()
    for row in result.cell_values:
        pending[row.metric] += row.pending
    usage = usage_totals(result.runs)
    return {
        "scenario": scenario,
        "stats": stats,
        "holm_level": HOLM_LEVEL,
        "expected_runs": len(scenario.cells) * scenario.repetitions,
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
        "metrics": [
            {
                "name": metric,
                "type": result.metric_types[metric],
                "pending_only": result.metric_types[metric].note == PENDING_NOTE,
            }
            for metric in scenario.metrics
        ],
        "values": {key: describe_value(row) for key, row in values.items()},
        "gaps": [
            {
                "gap": gap,
                "value_cell": describe_value(values[gap.cell, gap.metric]),
                "value_ref": describe_value(values[gap.reference, gap.metric]),
                "difference": _signed(gap.verdict.gap, gap.kind),
                "interval": _interval(gap.verdict.ci_low, gap.verdict.ci_high, gap.kind),
                "p": _p_value(gap.verdict.p),
                "p_holm": _p_value(gap.p_holm),
            }
            for gap in result.gaps
        ],
        "established": [describe_gap_plainly(gap, values) for gap in result.established],
        "surviving_holm": sum(gap.survives_holm for gap in result.gaps),
        "isolated": [{"row": row, "text": describe_isolated(row)} for row in isolated],
        "invalid": group_reasons(result.runs, "invalid"),
        "failed": group_reasons(result.runs, "failed"),
        "pending": [
            {"metric": metric, "count": pending[metric], "forms": forms_filling(scenario, metric)}
            for metric in scenario.metrics
            if pending[metric]
        ],
        "missing": result.missing,
        "bad_files": result.bad_files,
        "provenance": provenance_rows(result, scenario),
        "usage": {
            "runs": len(result.runs),
            "duration_s": _count(usage["duration_s"]),
            "input_tokens": _count(usage["input_tokens"]),
            "output_tokens": _count(usage["output_tokens"]),
            "cost_usd": f"{usage['cost_usd']:.2f}",
            "priced_runs": usage["priced_runs"],
        },
    }


def forms_filling(scenario, metric: str) -> list[str]:
    """The form validators of the scenario that fill a metric."""
    return [
        name
        for name, spec in scenario.validators.items()
        if spec.mode == "form" and metric in (spec.options.get("fills") or [])
    ]
