"""The server process: llama.cpp's OpenAI- and Anthropic-compatible server on 127.0.0.1.

Run as `python -m agentab.local_model.serve MODEL PORT ALIAS THREADS CONTEXT SLOTS [TEMPLATE]` by
`server.LocalModel`; it serves until it is ended (SIGTERM, Ctrl-C). TEMPLATE is a Jinja chat
template file that replaces the one inside the GGUF file.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    import xllamacpp

    model, port, alias, threads, context, slots, *template = argv
    params = xllamacpp.CommonParams()
    params.model.path = model
    # Each slot serves one request at a time with a context of its own and keeps the prompt it
    # last served: two runs at once on one slot take turns and each evicts the other's prompt
    # from the cache, read again in full at every turn (a minute of 1 300 tokens on 2 cores).
    params.n_parallel = int(slots)
    params.n_ctx = int(context) * int(slots)
    params.cpuparams.n_threads = int(threads)
    params.cpuparams_batch.n_threads = int(threads)
    params.port = int(port)
    params.hostnames = ["127.0.0.1"]
    # Jinja templates: llama.cpp reads from the template how the model writes a tool call, and
    # parses the model's replies into `tool_calls` by it.
    params.use_jinja = True
    if template:
        params.chat_template = Path(template[0]).read_text()
    params.model_alias = {alias}
    server = xllamacpp.Server(params)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with contextlib.suppress(KeyboardInterrupt):
        signal.pause()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
