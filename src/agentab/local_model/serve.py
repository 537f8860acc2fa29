"""The server process: llama.cpp's OpenAI- and Anthropic-compatible server on 127.0.0.1.

Run as `python -m agentab.local_model.serve MODEL PORT ALIAS THREADS CONTEXT` by
`server.LocalModel`; it serves until it is ended (SIGTERM, Ctrl-C).
"""

from __future__ import annotations

import contextlib
import signal
import sys


def main(argv: list[str]) -> int:
    import xllamacpp

    model, port, alias, threads, context = argv
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_ctx = int(context)
    params.n_parallel = 1  # one run at a time: the context is not shared among runs
    params.cpuparams.n_threads = int(threads)
    params.cpuparams_batch.n_threads = int(threads)
    params.port = int(port)
    params.hostnames = ["127.0.0.1"]
    params.use_jinja = True  # the model's own chat template, with its tool calls
    params.model_alias = {alias}
    server = xllamacpp.Server(params)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with contextlib.suppress(KeyboardInterrupt):
        signal.pause()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
