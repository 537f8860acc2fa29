"""What Snakemake prints on the terminal, and what it keeps on disk.

`profiles/default` sets `quiet: [rules, progress, host]`: the terminal shows agentab's progress
line, its summary and what to do, not Snakemake's ten lines per job. Three things the profile
alone cannot say are set here, as the Snakefile is read:

- Snakemake's log on disk (`.snakemake/log/<time>.snakemake.log`, named at the end as
  "Complete log(s)") gets Snakemake's full listing, every job's block included, whatever the
  terminal shows: the quiet filter is taken off the file handlers only.
- A job that failed the expected way (a fault, exit 3; an error a person must fix, exit 2; a
  stop, 128 + signal) prints no `RuleException: CalledProcessError` block on the terminal: its
  reason is the one line `failure_advice` prints per failed job at the end (the file keeps the
  block, and `failed_job_logs` reads it there). Any other failure is shown as Snakemake says it.
- Snakemake's "Select jobs to execute..." and "Execute N jobs..." of every scheduling round are
  left out of the terminal (they carry no event `quiet` knows).
- A dry run shows Snakemake's table of jobs per rule (`snakemake -n`: what would run), which
  `quiet: progress` would hide.

With `--quiet host` on the command line (it replaces the profile's list), the terminal shows
Snakemake's full listing again and nothing here filters it.
"""

from __future__ import annotations

import logging
import re

SNAKEMAKE_LOGGER = "snakemake.logging"
# Expected ends of a step: an error a person must fix, a fault, a stop (128 + the signal).
EXPECTED_EXITS = frozenset({2, 3, *range(129, 160)})
# How Snakemake 9.27 reports a failed shell job (an ERROR record of its exception's text).
FAILED_COMMAND = re.compile(r"CalledProcessError.*returned non-zero exit status (\d+)\.", re.S)
# Snakemake's closing words after a failed job: "look above", where nothing is now.
# Snakemake's words per scheduling round (twice a round, hundreds of times a matrix).
SCHEDULING = re.compile(r"Select jobs to execute\.\.\.|Execute \d+ jobs\.\.\.")
CLOSING_WORDS = (
    "Exiting because a job execution failed",
    "At least one job did not complete successfully",
)


class ExpectedFailures(logging.Filter):
    """Leaves out a failed job's `CalledProcessError` block when the step ended the expected
    way, Snakemake's "look above" words when every failure so far was such a one, and its
    words per scheduling round."""

    def __init__(self) -> None:
        super().__init__()
        self.left_out = 0
        self.shown = 0

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.levelno < logging.ERROR:
            return not SCHEDULING.fullmatch(text.strip())
        if found := FAILED_COMMAND.search(text):
            if int(found.group(1)) in EXPECTED_EXITS:
                self.left_out += 1
                return False
            self.shown += 1
            return True
        only_expected = self.left_out and not self.shown
        return not (only_expected and any(words in text for words in CLOSING_WORDS))


def shape_output(dry: bool, logger: logging.Logger | None = None) -> ExpectedFailures | None:
    """Set Snakemake's handlers as the module says; the filter added to the terminal, if any.

    Works on Snakemake's own handler objects (9.27): another Snakemake without them is left as
    it prints."""
    logger = logger or logging.getLogger(SNAKEMAKE_LOGGER)
    added = None
    for handler in logger.handlers:
        quiet_filters = [f for f in handler.filters if isinstance(getattr(f, "quiet", None), set)]
        if not quiet_filters:
            continue
        if isinstance(handler, logging.FileHandler):
            for found in quiet_filters:
                found.quiet = set()  # a new set: the terminal's filter shares the old one
            continue
        names = {getattr(q, "name", str(q)).upper() for f in quiet_filters for q in f.quiet}
        if dry:
            for found in quiet_filters:
                found.quiet = {q for q in found.quiet if getattr(q, "name", "") != "PROGRESS"}
        elif "RULES" in names:
            added = ExpectedFailures()
            handler.addFilter(added)
    return added
