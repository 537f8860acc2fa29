#!/usr/bin/env python3
"""A validator that tries to learn which cell it scores: it reads every file it is handed, its
environment, and lists every folder it can reach by walking five parents up from every path it
gets (its context file, workdir, transcript, patch, cwd, HOME, TMPDIR); it reads every process
it can see in /proc (command line, environment, working folder, open descriptors), its own
mounts, and any `.secret` or `results` folder it can find. It reports every forbidden word it
finds (listed in `forbidden.json` beside it: as arguments they would be in its own command
line) with where it found it, and any token count
or cost in what it is handed (they tell the size of a brick)."""

import contextlib
import json
import os
import sys
from pathlib import Path

forbidden = json.loads((Path(__file__).resolve().parent / "forbidden.json").read_text())
context_file = sys.argv[1]
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
for pid in [entry for entry in os.listdir("/proc") if entry.isdigit()]:
    proc = Path("/proc") / pid
    for name in ("cmdline", "environ"):
        with contextlib.suppress(OSError):
            texts[f"/proc/{pid}/{name}"] = (
                (proc / name).read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
    links = [proc / "cwd", proc / "root", proc / "exe"]
    with contextlib.suppress(OSError):
        links += list((proc / "fd").iterdir())
    for link in links:
        with contextlib.suppress(OSError):
            texts[f"link {link}"] = os.readlink(link)
with contextlib.suppress(OSError):
    texts["mountinfo"] = Path("/proc/self/mountinfo").read_text()
for root in ("/", "/workspace", "/inputs", "/home", "/tmp", "/opt", "/results"):
    for found in [*Path(root).glob("*/.secret"), *Path(root).glob("**/results")][:20]:
        with contextlib.suppress(OSError):
            texts[f"found {found}"] = str(found) + (found.read_text() if found.is_file() else "")
counts = sorted(
    {
        f"{key!r} in {where}"
        for where in ("context", "transcript")
        for key in ('"usage"', "input_tokens", "output_tokens", "cost_usd", '"tokens"')
        if key in texts[where]
    }
)
leaks = sorted(
    {f"{word!r} in {where}" for where, text in texts.items() for word in forbidden if word in text}
)
print(
    json.dumps(
        {
            "metrics": {"blind": not leaks, "leaks": leaks, "counts": counts},
            "reasons": {"blind": "; ".join(leaks)[:2000] or "nothing found"},
        }
    )
)
