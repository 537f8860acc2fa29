"""Every figure, table and verdict of the synthesis, byte for byte, on fixed results folders:
the two synthesis benchmarks' fabricated results, the report tests' folder, and a real run of
the demo (its measures kept in tests/unit/fixtures/demo-results). A change of the synthesis's
layout or speed must leave them as they are; a change of what it says rewrites the digests
on purpose:

    python tests/unit/test_synthesis_outputs.py --write

The digests are kept per machine: numpy's float64 log and exp are vector code chosen for the
processor (an AVX-512 one has its own), and their last bits reach the numbers a synthesis with
several tasks pools on the log scale. A machine whose float math has digests of its own is held
to them; another, to one of the recorded machines' (the first digests were written on a machine
whose float math was not recorded). `--write` writes this machine's.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from agentab.cli import main

ROOT = Path(__file__).resolve().parents[2]
DIGESTS = ROOT / "tests" / "unit" / "fixtures" / "synthesis-digests.json"
DEMO_RESULTS = ROOT / "tests" / "unit" / "fixtures" / "demo-results"
REPETITIONS = 12


def benchmark(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "benchmarks"))  # bench_synthesize_tasks imports its sibling
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def fabricated(name: str, folder: Path) -> Path:
    folder.mkdir(parents=True)
    benchmark(name).write_results(folder, REPETITIONS)
    return folder


def report_folder(folder: Path) -> Path:
    from tests.unit.report_folder import write_results

    folder.mkdir(parents=True)
    write_results(folder)
    return folder


def demo(folder: Path) -> Path:
    shutil.copytree(DEMO_RESULTS, folder)
    return folder


FOLDERS = {
    "bench_synthesize": lambda folder: fabricated("bench_synthesize", folder),
    "bench_synthesize_tasks": lambda folder: fabricated("bench_synthesize_tasks", folder),
    "report_folder": report_folder,
    "demo": demo,
}


def outputs(folder: Path) -> dict[str, str]:
    """sha256 of every file the synthesis wrote (everything outside runs/ it did not find)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "runs" not in path.relative_to(folder).parts
    }


def synthesized(name: str, root: Path) -> dict[str, str]:
    folder = FOLDERS[name](root / name)
    before = set(outputs(folder))
    assert main(["synthesize", str(folder)]) == 0
    return {rel: sha for rel, sha in outputs(folder).items() if rel not in before}


def float_math() -> str:
    """What decides the last bits of numpy's float64 log and exp on this machine."""
    x = np.linspace(-30.0, 30.0, 2001)
    sample = np.concatenate([np.log(np.abs(x) + 1e-3), np.exp(x), np.expm1(x)])
    return f"numpy {np.__version__}, log/exp {hashlib.sha256(sample.tobytes()).hexdigest()[:16]}"


def recorded() -> dict[str, dict[str, dict[str, str]]]:
    """machine's float math -> folder -> output -> sha256."""
    return json.loads(DIGESTS.read_text())["machines"]


def changed_outputs(expected: dict[str, str], found: dict[str, str]) -> list[str]:
    return sorted(
        rel for rel in expected.keys() | found.keys() if expected.get(rel) != found.get(rel)
    )


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_the_synthesis_writes_what_it_wrote(name: str, tmp_path: Path, capsys) -> None:
    machines = recorded()
    found = synthesized(name, tmp_path)
    capsys.readouterr()
    assert len(found) >= 5  # synthesis.md, cells.csv, gaps.csv, measures.csv, gaps.svg, …
    here = float_math()
    candidates = {here: machines[here]} if here in machines else machines
    changes = {
        machine: changed_outputs(folders[name], found) for machine, folders in candidates.items()
    }
    assert min(map(len, changes.values())) == 0, f"{name}: these outputs changed: {changes}"


def write_digests() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        digests = {name: synthesized(name, Path(tmp)) for name in sorted(FOLDERS)}
    # What the synthesis says changed: other machines' digests no longer hold, until each
    # writes its own again.
    machines = {float_math(): digests}
    DIGESTS.write_text(json.dumps({"machines": machines}, indent=2, sort_keys=True) + "\n")
    print(f"wrote {DIGESTS} for {float_math()}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(__doc__)
    sys.path.insert(0, str(ROOT))
    write_digests()
