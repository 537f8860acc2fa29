"""The `agentab` command: one subcommand per module under `agentab.commands`.

Errors a person can fix are printed with their fix and exit 2; a traceback shown to a user
is a bug, so anything unexpected is reported as one, with where to look.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

from agentab.errors import AgentabError, storage_error

COMMANDS = ("check", "synthesize", "plan", "form", "report", "runs", "redo", "sandbox", "tasks")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command, or with `only` one of its subcommands: a command imports what it
    needs and nothing of the others (the synthesis paid for the report's imports)."""
    parser = argparse.ArgumentParser(
        prog="agentab",
        description=(
            "A/B experiments for coding-agent harnesses. A scenario (one TOML file) names a task, "
            "a pinned repository state, the configurations to compare and how to score a run; "
            "`snakemake --cores 8` runs it, and these commands check scenarios and read results."
        ),
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in (only,) if only in COMMANDS else COMMANDS:
        if importlib.util.find_spec(f"agentab.commands.{name}") is None:
            continue  # a partial install (a command being built) still serves the others
        importlib.import_module(f"agentab.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(only=argv[0] if argv else None)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except AgentabError as error:
        print(error.render(), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as error:
        # A full disk or a read-only folder: a person must act, and is told where and how.
        found = storage_error(error) or AgentabError(f"{error.filename or ''}: {error.strerror}")
        print(found.render(), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
