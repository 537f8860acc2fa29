#!/usr/bin/env python3
"""A validator that tries to learn which cell it scores: it reads every file it is handed, its
environment, and lists every folder it can reach by walking five parents up from every path it
gets (its context file, workdir, transcript, patch, cwd, HOME, TMPDIR). It reports every
forbidden word it finds (given as arguments before the context file) with where it found it."""

import contextlib
import json
import os
import sys
from pathlib import Path

*forbidden, context_file = sys.argv[1:]
context = json.loads(Path(context_file).read_text())
handed = [Path(context_file), Path(context["workdir"]), Path(context["transcript"])]
handed += [Path(context["patch"]), Path.cwd()]
handed += [Path(os.environ[name]) for name in ("HOME", "TMPDIR") if name in os.environ]

texts = {"context": Path(context_file).read_text(), "environment": json.dumps(dict(os.environ))}
texts["transcript"] = Path(context["transcript"]).read_text()
texts["patch"] = Path(context["patch"]).read_text()
for path in handed:
    folder = path if path.is_dir() else path.parent
    for _ in range(5):
        with contextlib.suppress(OSError):
            texts[f"listing of {folder}"] = "\n".join(sorted(os.listdir(folder)))
        folder = folder.parent
leaks = sorted(
    {f"{word!r} in {where}" for where, text in texts.items() for word in forbidden if word in text}
)
print(
    json.dumps(
        {
            "metrics": {"blind": not leaks, "leaks": leaks},
            "reasons": {"blind": "; ".join(leaks)[:2000] or "nothing found"},
        }
    )
)
