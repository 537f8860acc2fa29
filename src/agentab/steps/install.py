"""`python -m agentab.steps.install --harness pi --version 1.6.0 --harnesses-dir DIR`

Installs a harness at a pinned version into `DIR/<harness>/<version>/`; `installed.json` there is
written last and is the output a workflow rule waits for. Installing twice does nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentab.errors import AgentabError
from agentab.harnesses import get_harness


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m agentab.steps.install",
        description="Install an agent harness at a pinned version into a project-local folder.",
    )
    p.add_argument("--harness", required=True, help="the harness name, e.g. pi")
    p.add_argument("--version", required=True, help="the exact version to install")
    p.add_argument("--harnesses-dir", type=Path, required=True, help="where installs live")
    args = p.parse_args(argv)
    try:
        installation = get_harness(args.harness).install(args.version, args.harnesses_dir)
    except AgentabError as error:
        print(error.render(), file=sys.stderr)
        return 2
    print(f"{installation.harness} {installation.version}: {installation.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
