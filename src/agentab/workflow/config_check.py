"""The workflow's config checked against config/config.schema.yaml, said as a person's error.

Snakemake's `validate` reports a config that breaks the schema as a jsonschema dump (the
failed rule, the schema's fragment, the instance), under a WorkflowError: the commonest case,
`--config scenarios=path` (a string where a list belongs), read as a crash. Each problem is
said here on one line, with the key and the fix; Snakemake's `validate` then runs on a config
that passes, to fill the schema's defaults as before.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from agentab.errors import AgentabError, Problem, problem

CONFIG_FILE = "config/config.yaml"
CONFIG_DOC = "docs/workflow.md#the-config"
# What to write instead, for the keys a command line sets most.
FIXES = {
    "scenarios": "give a list, quoted for the shell: "
    "--config 'scenarios=[\"scenarios/demo/scenario.toml\"]'",
    "confinement": "bwrap (the default) or none",
}


def config_problems(config: dict, schema_path: Path | str) -> list[Problem]:
    """Each way the config breaks the schema, as a problem naming its key."""
    import jsonschema

    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    found = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path)):
        path = [str(part) for part in error.absolute_path]
        key = ".".join(path)
        if error.validator == "additionalProperties":
            known = ", ".join(sorted(schema.get("properties") or {}))
            fix = f"the config's keys are: {known}"
        else:
            fix = FIXES.get(path[0] if path else "", f"see {CONFIG_DOC}")
        where = f"{CONFIG_FILE} (with --config)"
        found.append(problem(where, key, " ".join(error.message.split())[:300], fix))
    return found


def check_config(config: dict, schema_path: Path | str) -> None:
    """Raise an AgentabError naming every problem of the config; nothing when it passes."""
    found = config_problems(config, schema_path)
    if found:
        raise AgentabError(found)
