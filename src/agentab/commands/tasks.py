"""`agentab tasks mine`: tasks from a repository's own history (docs/tasks.md)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from agentab.confinement.bwrap import BWRAP, MODES, require_sandbox
from agentab.errors import AgentabError, problem
from agentab.mining.decide import REPEATS, STAGES
from agentab.mining.mine import Outcome, Request, mine, print_progress
from agentab.mining.trial import Settings
from agentab.validators.tests_collect import RUNNERS


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "tasks",
        help="make tasks from a repository's history (agentab tasks mine --help)",
        description="Tasks from a repository's own history.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    mine_parser = actions.add_parser(
        "mine",
        help="turn bug-fix commits into tasks whose tests fail before the fix and pass after",
        description=(
            "Walk the history after --since, keep the commits that change both code and tests, "
            "and try each on its parent: the commit's tests must fail there, pass with the "
            "commit's fix, and every other test pass both times, on each of --repeats tries: "
            "every test file of the repository the runner's file patterns match, or only "
            "--suite's (or the scenario's tests validator's `tests`) when given. "
            "Writes OUT/scenario.toml (the kept tasks, runnable with snakemake as they stand), "
            "OUT/tasks.toml (to paste into a scenario of yours), the bundle the tasks start "
            "from, their hidden tests and prompts, and OUT/mined.json (why every other commit "
            "was dropped). The repository itself is only read. docs/tasks.md says how."
        ),
    )
    mine_parser.add_argument(
        "repo", metavar="REPO", help="a git repository: a path, a URL or a bundle"
    )
    mine_parser.add_argument(
        "--since", required=True, metavar="REF",
        help="mine the commits after this one (an ancestor of --until: another is refused)",
    )  # fmt: skip
    mine_parser.add_argument(
        "--until", default="HEAD", metavar="REF", help="up to this commit (default HEAD)"
    )
    mine_parser.add_argument("--limit", type=int, metavar="N", help="stop once N tasks are kept")
    mine_parser.add_argument(
        "--out", type=Path, metavar="DIR", help="where to write (default mined/<repo name>)"
    )
    mine_parser.add_argument(
        "--scenario", type=Path, metavar="FILE",
        help="take the environment from this file: [etalon] setup and path, [validation] "
        "protect, [protocol] limits (the mined scenario keeps them), and its tests validator's "
        "runner and tests (run as the suite every candidate must keep passing); a file of "
        "those alone will do, a complete scenario too",
    )  # fmt: skip
    mine_parser.add_argument(
        "--setup", action="append", default=[], metavar="CMD",
        help="a command that makes the environment in each checkout, as [etalon] setup (repeat)",
    )  # fmt: skip
    mine_parser.add_argument(
        "--path", action="append", default=[], metavar="DIR",
        help="a folder of the checkout put first on PATH, as [etalon] path (e.g. .venv/bin)",
    )  # fmt: skip
    mine_parser.add_argument(
        "--runner", choices=RUNNERS, help="the test runner (default pytest, or the scenario's)"
    )
    mine_parser.add_argument(
        "--suite", action="append", default=[], metavar="PATH",
        help="a test file or folder whose tests must pass before and after every fix (repeat); "
        "without it, every test file the runner's patterns match in the repository",
    )  # fmt: skip
    mine_parser.add_argument(
        "--issues", type=Path, metavar="FILE",
        help='issue texts by number (JSON or TOML: {"366": "..."}): a commit that names #366 '
        "gets that text as its prompt instead of its message; nothing is fetched",
    )  # fmt: skip
    mine_parser.add_argument(
        "--repeats",
        type=int,
        default=REPEATS,
        metavar="K",
        help=f"tries of each side (default {REPEATS})",
    )
    mine_parser.add_argument(
        "--confinement",
        choices=MODES,
        default=BWRAP,
        help="run the tests in the sandbox (default) or not",
    )
    mine_parser.add_argument("--dry-run", action="store_true", help="list the candidates; try none")
    mine_parser.set_defaults(func=run)


def run(args) -> int:
    if args.limit is not None and args.limit < 1:
        raise AgentabError(
            problem(
                "agentab tasks mine",
                "--limit",
                "must be 1 or more",
                "give --limit 1 or more, or leave it out",
            )
        )
    if args.repeats < 1:
        raise AgentabError(
            problem(
                "agentab tasks mine", "--repeats", "must be 1 or more", f"give --repeats {REPEATS}"
            )
        )
    settings = settings_from(args)
    out = (args.out or Path("mined") / repo_stem(args.repo)).absolute()
    request = Request(
        source=source_location(args.repo),
        since=args.since,
        until=args.until,
        limit=args.limit,
        repeats=args.repeats,
        issues=read_issues(args.issues) if args.issues else {},
        name=repo_stem(out.name),  # the scenario's name, so its results/<name>
    )
    if args.dry_run:
        return dry_run(request, out, settings)
    require_sandbox(args.confinement, "--confinement")
    print(f"mining {request.source} after {request.since} into {out}")
    outcome = mine(request, out, settings, print_progress)
    print_summary(outcome, out, request)
    return 0


def repo_stem(repo: str) -> str:
    stem = Path(repo.rstrip("/")).name.removesuffix(".git").removesuffix(".bundle")
    return re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-") or "repo"


def source_location(repo: str) -> str:
    if re.match(r"^[a-z][a-z0-9+.-]*://", repo) or re.match(r"^[^/]+@[^/]+:", repo):
        return repo
    path = Path(repo).absolute()
    if not path.exists():
        raise AgentabError(
            problem(
                repo,
                "REPO",
                "does not exist",
                "give the path of a git repository, a bundle or a URL",
            )
        )
    return str(path)


def settings_from(args) -> Settings:
    runner, suite, etalon, protect, limits = args.runner, list(args.suite), None, None, None
    if args.scenario is not None:
        from agentab.mining.environment import load_environment

        # The environment alone: a file of setup, path, protect, limits and a tests
        # validator is whole here (a complete scenario is read the same way).
        environment = load_environment(args.scenario)
        etalon, limits, protect = environment.etalon, environment.limits, environment.protect
        runner = runner or environment.runner
        # The project's own suite: what its tests validators run of the tag.
        suite += [path for path in environment.suite if path not in suite]
    if args.setup or args.path:
        from agentab.scenario.types import Etalon

        etalon = Etalon(
            repo="", tag="", location="",
            setup=(*(etalon.setup if etalon else ()), *args.setup),
            path=(*(etalon.path if etalon else ()), *args.path),
            setup_timeout_s=etalon.setup_timeout_s if etalon else 600.0,
        )  # fmt: skip
    return Settings(
        runner=runner or "pytest",
        suite=tuple(suite),
        etalon=etalon,
        protect=tuple(protect) if protect is not None else None,
        limits=limits,
        confinement=args.confinement,
    )


def read_issues(path: Path) -> dict[str, str]:
    """Issue number → text, from a JSON or TOML file: a text, or a table with title and body."""
    try:
        raw = path.read_text(encoding="utf-8")
        data = tomllib.loads(raw) if path.suffix == ".toml" else json.loads(raw)
    except (OSError, ValueError) as error:
        raise AgentabError(
            problem(
                path,
                "--issues",
                f"cannot be read: {error}",
                'write {"366": "the issue text"} (JSON) or "366" = "…" (TOML)',
            )
        ) from None
    if not isinstance(data, dict):
        raise AgentabError(
            problem(
                path,
                "--issues",
                "is not a table of issue numbers",
                'write {"366": "the issue text"}',
            )
        )
    issues = {}
    for number, text in data.items():
        if isinstance(text, dict):
            text = "\n\n".join(str(text[key]) for key in ("title", "body") if text.get(key))
        if not str(number).isdigit() or not isinstance(text, str):
            raise AgentabError(
                problem(
                    path,
                    f"--issues: {number}",
                    "is not an issue number with its text",
                    'write "366" = "the issue text"',
                )
            )
        issues[str(number)] = text
    return issues


def dry_run(request: Request, out: Path, settings: Settings) -> int:
    """The candidates, as the walk finds them: nothing is tried, nothing written but the copy."""
    from agentab.mining.history import why_not_a_candidate
    from agentab.mining.mine import runner_targets, walked_commits
    from agentab.mining.workspace import MiningRepo

    repo = MiningRepo(out)
    repo.copy_from(request.source)
    commits = walked_commits(repo, request)
    count = 0
    for commit in commits:
        why = why_not_a_candidate(commit)
        if why is None and not runner_targets(commit, settings.runner):
            why = f"changes no test file {settings.runner} collects"
        count += why is None
        print(f"{commit.sha[:7]} {commit.subject[:50]:50}  {why or 'candidate'}")
    print(f"dry run: {count} candidate(s) among {len(commits)} commit(s); nothing tried")
    return 0


def print_summary(outcome: Outcome, out: Path, request: Request) -> None:
    counts = outcome.record(request)["funnel"]
    print(f"commits walked: {len(outcome.commits)}")
    print("funnel:  " + " → ".join(f"{stage} {counts[stage]}" for stage in STAGES))
    for entry in outcome.commits:
        if "task" in entry:
            print(f"  kept     {entry['sha'][:7]} {entry['task']}")
        elif entry.get("candidate"):
            print(f"  dropped  {entry['sha'][:7]} {entry['subject'][:40]}: {entry['reason']}")
    if outcome.kept:
        print(f"wrote {out / 'scenario.toml'} and {out / 'tasks.toml'}; check them with")
        print(f"  agentab check {out / 'scenario.toml'}")
    else:
        print(f"no task kept; {out / 'mined.json'} says why each commit was dropped")
