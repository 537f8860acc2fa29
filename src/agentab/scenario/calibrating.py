"""A form that checks a judge against people: `calibrates` and `sample`, checked at load.

```toml
[validators.people]
mode = "form"
fills = ["on_task_person"]     # the person's answer to the judge's question
calibrates = "on_task"         # the judge's metric it is compared with
sample = 40                    # how many runs a person labels, drawn with a seed
```

A calibrating form labels a sample of runs, not every run, so its metric stays out of the
contract: in it, every run left out of the sample would wait for a person forever, and a rate
over a sample is not the cell's rate (the synthesis corrects the judge's rate with it instead).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentab.scenario.rules import resolve_file
from agentab.scenario.source import Collector

CALIBRATES = "calibrates"
SAMPLE = "sample"


def is_calibrating(spec: dict) -> bool:
    return CALIBRATES in spec


def check_calibrating_form(
    name: str, spec: dict, data: dict, judges: dict[str, str], sc_dir: Path, sink: Collector
) -> None:
    """The rules of `calibrates` and `sample`. `judges`: metric -> the judge whose schema
    declares it (empty when the schemas were not read: a frozen scenario)."""
    key = f"validators.{name}"
    if SAMPLE in spec and CALIBRATES not in spec:
        sink.add(
            f"{key}.{SAMPLE}",
            "`sample` is how many runs a calibrating form lists; without `calibrates`, a form "
            "lists every run",
            f'add calibrates = "<a judge\'s metric>" to [{key}], or remove sample',
        )
    if CALIBRATES not in spec:
        return
    if SAMPLE not in spec:
        sink.add(
            f"{key}.{SAMPLE}",
            "a calibrating form needs `sample`: how many runs a person labels",
            "add sample = N (e.g. sample = 40: drawn with a seed, spread over the cells)",
        )
    contract = data.get("validation", {}).get("metrics", [])
    fills = spec.get("fills", [])
    if len(fills) != 1:
        sink.add(
            f"{key}.fills",
            f"a calibrating form fills one metric, the person's answer to the judge's "
            f"question; this one fills {len(fills)}",
            f'write fills = ["{spec[CALIBRATES]}_person"]',
        )
    for metric in [m for m in fills if m in contract]:
        sink.add(
            f"{key}.fills",
            f"`{metric}` labels a sample of runs only: in the metric contract, every run "
            "outside the sample would wait for a person forever",
            f"remove `{metric}` from [validation].metrics: the synthesis reads it beside the "
            f'judge\'s `{spec[CALIBRATES]}` (section "The judge against people")',
        )
    check_calibrated_metric(key, spec[CALIBRATES], contract, judges, data, sc_dir, sink)


def check_calibrated_metric(
    key: str,
    metric: str,
    contract: list,
    judges: dict[str, str],
    data: dict,
    sc_dir: Path,
    sink: Collector,
) -> None:
    where = f"{key}.{CALIBRATES}"
    if metric not in contract:
        sink.add(
            where,
            f"`{metric}` is not in the metric contract: the judge's rate per cell is what the "
            "form's labels correct",
            f"add `{metric}` to [validation].metrics",
        )
    if not judges:
        return  # the judges' schemas were not read (a frozen scenario): checked when it ran
    if metric not in judges:
        known = ", ".join(f"`{m}`" for m in sorted(judges)) or "(no judge declares a metric)"
        sink.add(
            where,
            f"`{metric}` is not a metric of any judge: a calibrating form checks a judge",
            f"name a metric of a judge's schema: {known}",
        )
        return
    judge = data["validators"][judges[metric]]
    kind = judge_property_type(judge, metric, sc_dir)
    if kind is None:
        return  # an unreadable schema, or one without types: the judge's own check names it
    if kind != "boolean":
        sink.add(
            where,
            f"the judge `{judges[metric]}` answers `{metric}` with a {kind}"
            ": κ and the corrected rate compare yes/no answers",
            f'make `{metric}` {{"type": "boolean"}} in the judge\'s schema, or calibrate '
            "another metric",
        )


def judge_property_type(judge: dict, metric: str, sc_dir: Path) -> str | None:
    """The JSON type the judge's schema gives a metric (its own check reports a bad schema)."""
    path = resolve_file(sc_dir, judge["schema_file"], "", Collector(sc_dir, ""))
    try:
        schema = json.loads(path.read_text(encoding="utf-8-sig")) if path else {}
    except (OSError, ValueError):
        return None
    found = (schema.get("properties") or {}).get(metric) if isinstance(schema, dict) else None
    return found.get("type") if isinstance(found, dict) else None
