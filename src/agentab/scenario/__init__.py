"""The scenario: one TOML file, everything that decides what is measured.

`source` reads the file (TOML with the line of every key, the schema), `rules` holds the
load-time rules, `types` the objects, `cells` the grid × variants expansion, `bricks` what a
brick is on disk, `durations` the time spans; `load` puts them together. This public interface is
what the rest of agentab imports.
"""

from agentab.scenario.bricks import content_sha256
from agentab.scenario.durations import parse_duration
from agentab.scenario.load import load_scenario, load_scenario_for_step
from agentab.scenario.types import AgentConfig, Brick, Cell, Etalon, Scenario, ValidatorSpec

__all__ = [
    "AgentConfig",
    "Brick",
    "Cell",
    "Etalon",
    "Scenario",
    "ValidatorSpec",
    "content_sha256",
    "load_scenario",
    "load_scenario_for_step",
    "parse_duration",
]
