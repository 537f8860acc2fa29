"""Install step: `python -m agentab.steps.install --harness pi --version 1.6.0 --harnesses-dir DIR`

Installs a harness at a pinned version into `DIR/<harness>/<version>/`; `installed.json` there is
written last and is the output a workflow rule waits for. Installing twice does nothing.
"""

from __future__ import annotations

from pathlib import Path

from agentab.harnesses import get_harness
from agentab.steps.common import run_step


def build(parser) -> None:
    parser.add_argument("--harness", required=True, help="the harness name, e.g. pi")
    parser.add_argument("--version", required=True, help="the exact version to install")
    parser.add_argument("--harnesses-dir", type=Path, required=True, help="where installs live")


def act(args) -> int:
    installation = get_harness(args.harness).install(args.version, args.harnesses_dir)
    print(f"{installation.harness} {installation.version}: {installation.root}")
    return 0


if __name__ == "__main__":
    run_step(build, act)
