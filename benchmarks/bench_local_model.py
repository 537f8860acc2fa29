"""A real small model on this machine: its server's start-up, its tokens per second, and
agentab's own time per run around it.

    python benchmarks/bench_local_model.py [--repetitions 3] [--starts 5] [--quick] [--timeout 10m]

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, assembled from the package registry's slices) on llama.cpp's
server from the xllamacpp wheel, 2 threads, 2 slots, the launcher's template. Start-up: from the process's start until `/v1/models`
lists the model. Tokens per second: the server's own timings of one chat completion (prompt
processing and generation apart). agentab's own time per run: the workflow's wall time on the
scenarios/local-model scenario (pi, 2 cells), less the time the agents' processes ran, over the
runs: clone, sandbox, recording proxy, validators, measures, the synthesis, Snakemake itself.
The workflow runs one job at a time (`--cores 1`), so that no two of those overlap.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from agentab.harnesses import get_harness
from agentab.local_model.model_file import TEMPLATE, installed_model
from agentab.local_model.server import LocalModel

REPO = Path(__file__).resolve().parent.parent
STATE = REPO / ".agentab"
SNAKEMAKE = Path(sys.executable).parent / "snakemake"
# A prompt of about 600 tokens, as long as pi's system prompt: prompt processing is then timed on
# a prompt of a run's size, not on a few tokens whose timing is noise.
PROMPT = "Write a Python function that returns the mean of a list of numbers. " * 40


def start_ups(gguf: Path, starts: int, folder: Path) -> list[float]:
    times = []
    for number in range(starts):
        with LocalModel(gguf, folder / f"start-{number}.log", template=TEMPLATE) as server:
            times.append(server.started_in_s)
    return times


def speeds(server: LocalModel, max_tokens: int) -> dict[str, float]:
    """The server's own timings of one completion, after one to warm it: prompt and
    generated tokens per second."""
    completion(server, 8)
    return completion(server, max_tokens)


def completion(server: LocalModel, max_tokens: int) -> dict[str, float]:
    body = {
        "model": server.alias,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "cache_prompt": False,
    }
    request = urllib.request.Request(
        server.url + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=300) as reply:
        answer = json.loads(reply.read())
    wall = time.monotonic() - started
    timings = answer.get("timings") or {}
    return {
        "prompt_tps": timings.get("prompt_per_second") or 0.0,
        "generated_tps": timings.get("predicted_per_second") or 0.0,
        "generated": answer["usage"]["completion_tokens"],
        "prompt": answer["usage"]["prompt_tokens"],
        "wall_s": wall,
    }


def workflow_project(root: Path, server: LocalModel, repetitions: int, timeout: str) -> Path:
    root.mkdir(parents=True)
    for name in ("Snakefile", "rules", "scripts", "config", "profiles", "envs"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, root / name)
    for name in ("local-model", "demo"):
        shutil.copytree(REPO / "scenarios" / name, root / "scenarios" / name)
    scenario = root / "scenarios" / "local-model" / "scenario.toml"
    text = re.sub(r'(?m)^url = "[^"]*"', f'url = "{server.url}"', scenario.read_text())
    text = re.sub(r"(?m)^repetitions = \d+", f"repetitions = {repetitions}", text)
    # A run of this model may repeat a call until its timeout: the bench's own bounds its time.
    text = re.sub(r'(?m)^timeout = "10m"', f"timeout = {timeout!r}", text)
    scenario.write_text(text)
    harnesses = STATE / "harnesses"
    (root / "config" / "config.yaml").write_text(
        "scenarios:\n  - scenarios/local-model/scenario.toml\nresults: results\n"
        f"state: .agentab\nharnesses: {harnesses}\n"
    )
    return root


def own_time_per_run(root: Path) -> dict[str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [str(SNAKEMAKE), "--cores", "1"], cwd=root, capture_output=True, text=True, check=False
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"bench_local_model: the workflow failed:\n{done.stderr[-3000:]}")
    records = [json.loads(p.read_text()) for p in root.glob("results/*/runs/*/r*/run.json")]
    agent = sum(record["duration_s"] for record in records)
    return {"runs": len(records), "wall_s": wall, "agent_s": agent}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=3, help="runs per cell (default 3)")
    parser.add_argument("--starts", type=int, default=5, help="server start-ups timed")
    parser.add_argument("--quick", action="store_true", help="1 start-up, 1 run per cell")
    parser.add_argument("--timeout", default="10m", help="each run's timeout (default 10m)")
    args = parser.parse_args()
    starts, repetitions, max_tokens = (
        (1, 1, 32) if args.quick else (args.starts, args.repetitions, 128)
    )
    get_harness("pi").install("1.6.0", STATE / "harnesses")
    gguf = installed_model(STATE / "models")
    with tempfile.TemporaryDirectory(prefix="agentab-bench-local-") as tmp:
        folder = Path(tmp)
        up = start_ups(gguf, starts, folder)
        with LocalModel(gguf, folder / "server.log", template=TEMPLATE) as server:
            speed = speeds(server, max_tokens)
            project = workflow_project(folder / "project", server, repetitions, args.timeout)
            own = own_time_per_run(project)
    per_run = (own["wall_s"] - own["agent_s"]) / max(own["runs"], 1)
    print("local model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama.cpp's server (xllamacpp)")
    print("| figure | value |\n|---|---|")
    print(f"| server start-up, median of {len(up)} | {statistics.median(up):.2f} s |")
    print(f"| prompt processing ({speed['prompt']} tokens) | {speed['prompt_tps']:.0f} tokens/s |")
    print(f"| generation ({speed['generated']} tokens) | {speed['generated_tps']:.1f} tokens/s |")
    print(f"| workflow: {own['runs']} runs of pi | {own['wall_s']:.1f} s wall |")
    print(f"| the agents' processes | {own['agent_s']:.1f} s |")
    print(f"| agentab's own time per run | {per_run:.2f} s |")
    share = per_run / (own["agent_s"] / max(own["runs"], 1)) if own["agent_s"] else 0.0
    print(f"| agentab's own time as a share of a run's | {share:.1%} |")


if __name__ == "__main__":
    main()
