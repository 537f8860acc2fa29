"""What each failed job said, for the invocation's last lines.

Snakemake reports a failed shell job as `RuleException: CalledProcessError … returned non-zero
exit status 3`: its command, not its reason. The reason is in the job's own log (every step's
command sends its output there: `> {log} 2>&1`), which `show-failed-logs` prints whole with
Snakemake's full listing (`--quiet host`) and the default profile's quiet terminal leaves out.
So the last lines name each failed job's log and the message its step ended on (a fault's
reason, a person's fix), whatever the terminal shows; Snakemake's log on disk, read here, is
always its full listing (agentab.workflow.output).

The logs are agentab's own steps' output, never a file an agent or validator wrote; they are
read as text and shown cut short.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from pathlib import Path

# A failed job's command as Snakemake 9.27 logs it: `Command '… > LOG 2>&1' returned non-zero
# exit status N.` (LOG quoted by the rule's `{log:q}` when it needs quotes).
FAILED_COMMAND = re.compile(r"> ('[^']*'|\S+) 2>&1' returned non-zero exit status \d+\.")
SHOWN_JOBS = 5
SHOWN_CHARS = 400


def failed_job_logs(logs: Iterable[Path | str]) -> list[Path]:
    """The log of every job that failed, in the order Snakemake's logs name them, once each."""
    found: list[Path] = []
    for log in logs:
        try:
            text = Path(log).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for match in FAILED_COMMAND.finditer(text):
            try:
                (path,) = shlex.split(match.group(1))
            except ValueError:
                continue
            if Path(path) not in found:
                found.append(Path(path))
    return found


def last_message(log: Path) -> str:
    """The last paragraph a step wrote to its log, on one line, cut short; "" when none."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").rstrip().splitlines()
    except OSError:
        return ""
    paragraph: list[str] = []
    for line in reversed(lines):
        if not line.strip():
            break
        paragraph.insert(0, line.strip())
    text = " ".join(" ".join(paragraph).split())
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def failed_job_lines(logs: Iterable[Path | str]) -> list[str]:
    """`agentab: <its log>: <what it said>` per failed job, the first few of them."""
    jobs = failed_job_logs(logs)
    lines = [
        f"agentab: {log}: {message}" for log in jobs[:SHOWN_JOBS] if (message := last_message(log))
    ]
    if len(jobs) > SHOWN_JOBS:
        lines.append(f"agentab: … and {len(jobs) - SHOWN_JOBS} more failed jobs, each in its log")
    return lines
