"""Each offline policy played on the etalon tags its cells run on, before anything runs.

`agentab check` and the workflow's start refuse a scenario whose offline policy has a step that
would fail in every run (`offline_model/edits.py`): an edit whose `old` text is not found
exactly once where the step applies, a read or an edit of a file the tag lacks. Each problem
names the policy file, the step and the tag; nothing runs until it is fixed.
"""

from __future__ import annotations

from pathlib import Path

from agentab import etalon
from agentab.errors import Problem, problem
from agentab.offline_model.edits import edit_problems
from agentab.offline_model.policy import load_policy


def policy_source(scenario, model: str) -> str:
    """A shipped policy by name, or a policy file named relative to the scenario."""
    return str((scenario.dir / model).resolve()) if model.endswith(".toml") else model


def policy_edit_problems(scenario, mirrors_dir: Path) -> list[Problem]:
    """The steps of every offline policy of the scenario that would fail on a tag it runs on."""
    tags: dict[str, set[str]] = {}
    for cell in scenario.run_cells:
        if cell.agent.provider == "offline":
            tags.setdefault(cell.agent.model, set()).add(scenario.etalon_for(cell).tag)
    problems = []
    for model, wanted in sorted(tags.items()):
        source = policy_source(scenario, model)
        policy = load_policy(source)
        where = source if model.endswith(".toml") else f"{scenario.path} [agent.model = {model!r}]"
        for tag in sorted(wanted):
            tree, _ = etalon.pristine_checkout(
                scenario.etalon.location, tag, mirrors_dir.absolute()
            )
            for found in edit_problems(policy.steps, tree_reader(tree)):
                problems.append(
                    problem(
                        where,
                        found.key,
                        f"the offline policy `{model}` on etalon tag {tag}: {found.message}",
                        found.fix,
                    )
                )
    return problems


def tree_reader(tree: Path):
    """The text of a file of the tag's checkout, or None (absent, a folder, in `.git`, or a link
    that leads out of the tree)."""
    root = tree.resolve()

    def read(relative: str) -> str | None:
        path = tree / relative
        if Path(relative).parts[:1] == (".git",) or not path.is_file():
            return None
        if not path.resolve().is_relative_to(root):
            return None
        return path.read_bytes().decode("utf-8", errors="replace")

    return read
