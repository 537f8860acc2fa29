"""There are no environment variables in this tool: no module reads the caller's environment."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READS_ENVIRONMENT = re.compile(r"os\.environ|getenv\(|environ\.get\(")


def test_no_source_file_reads_the_environment() -> None:
    sources = [
        *ROOT.joinpath("src", "agentab").rglob("*.py"),
        *ROOT.joinpath("rules").glob("*.smk"),
    ]
    sources += [ROOT / "Snakefile", *ROOT.joinpath("scripts").glob("*.py")]
    offenders = [
        str(p.relative_to(ROOT)) for p in sources if READS_ENVIRONMENT.search(p.read_text())
    ]
    assert len(sources) > 30
    assert offenders == []
