"""Names a scenario gives that agentab turns into file and folder names: a cell's slug
(`runs/<slug>/`, `report/cells/<slug>.html`) and a validator's name (`validators/<name>.json`,
`forms/<name>.blank.toml`, its log and lock).

It exists because a name that cannot be a file name fails late and far from its cause: one
too long for the file system ends the whole workflow with an OSError, other scenarios
included, and a validator named `../x` would write outside the run's folder.
"""

from __future__ import annotations

import re

from agentab.scenario.source import Collector, quote_key
from agentab.scenario.types import Cell

# File systems refuse a name over 255 bytes; the longest name agentab derives from a slug or
# a validator's name adds a dozen characters to it, and a person reads a folder listing.
LONGEST_SLUG = 100
LONGEST_VALIDATOR_NAME = 64
VALIDATOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_slug_lengths(cells: list[Cell], sink: Collector) -> None:
    for cell in cells:
        if len(cell.slug) > LONGEST_SLUG:
            key = f"variants.{quote_key(cell.name)}" if cell.is_variant else "axes"
            sink.add(
                key,
                f"cell `{cell.name[:60]}…` would keep its runs in a folder named by its "
                f"{len(cell.slug)} characters (runs/<slug>/), more than the {LONGEST_SLUG} "
                "a results folder allows",
                "shorten the axis values or the variant's name; the question or a comment "
                "can say the rest",
            )


def check_validator_names(data: dict, sink: Collector) -> None:
    for name in data.get("validators", {}):
        key = f"validators.{quote_key(name)}"
        if not VALIDATOR_NAME.fullmatch(name):
            sink.add(
                key,
                f"validator name {name!r} cannot name a file: it is the name of its output "
                "(validators/<name>.json) and of its form",
                "use letters, digits, '.', '_' and '-' only, starting with a letter or digit"
                + _suggested(name),
            )
        elif len(name) > LONGEST_VALIDATOR_NAME:
            sink.add(
                key,
                f"validator name `{name[:40]}…` is {len(name)} characters long; its files "
                f"need it at most {LONGEST_VALIDATOR_NAME}",
                "give the validator a shorter name",
            )


def _suggested(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._")
    return f", e.g. [validators.{safe}]" if safe and VALIDATOR_NAME.fullmatch(safe) else ""
