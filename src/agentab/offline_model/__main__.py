"""`python -m agentab.offline_model --policy NAME --seed N --log FILE [--harness H] [--port P]
[--port-file F]`"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from agentab.errors import AgentabError
from agentab.offline_model.policy import load_policy
from agentab.offline_model.server import OfflineModelServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentab.offline_model",
        description="Serve a seeded offline model (OpenAI chat completions and Responses, "
        "Anthropic messages) on 127.0.0.1, logging every request it receives as JSON lines.",
    )
    parser.add_argument("--policy", required=True, help="a shipped policy name or a .toml path")
    parser.add_argument("--seed", type=int, required=True, help="seed of every random draw")
    parser.add_argument("--log", type=Path, required=True, help="JSONL file of the requests")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    parser.add_argument(
        "--harness", help="the harness asking (pi, claude-code, …): its tools run the actions"
    )
    parser.add_argument("--port-file", type=Path, help="write the chosen port to this file")
    args = parser.parse_args(argv)
    try:
        policy = load_policy(args.policy)
        server = OfflineModelServer(policy, args.seed, args.log, args.port, harness=args.harness)
    except AgentabError as error:
        print(error.render(), file=sys.stderr)
        return 2
    if args.port_file:
        args.port_file.write_text(f"{server.server_address[1]}\n")
    print(server.base_url, flush=True)

    def stop(_signum, _frame):
        server.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_until_stopped()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
