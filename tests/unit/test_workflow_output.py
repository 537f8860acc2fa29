"""What the terminal shows of a workflow, and what Snakemake's log on disk keeps."""

from __future__ import annotations

import logging

from snakemake.logging import DefaultFilter
from snakemake.settings.enums import Quietness

from agentab.workflow.output import ExpectedFailures, shape_output

QUIET = {Quietness.RULES, Quietness.PROGRESS, Quietness.HOST}


def record(text: str, level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord("snakemake.logging", level, __file__, 1, text, None, None)


def failed(status: int) -> logging.LogRecord:
    return record(
        'RuleException:\nCalledProcessError in file "rules/run.smk", line 45:\n'
        f"Command 'python -m agentab.steps.run > r/logs/run.log 2>&1' returned non-zero exit "
        f"status {status}."
    )


def test_a_fault_or_a_persons_error_prints_no_snakemake_block_a_crash_does() -> None:
    found = ExpectedFailures()
    assert not found.filter(failed(3))
    assert not found.filter(failed(2))
    assert not found.filter(failed(143))  # stopped by SIGTERM
    assert not found.filter(record("Exiting because a job execution failed. Look above"))
    assert found.filter(failed(1))  # a crash is shown as Snakemake says it
    assert found.filter(record("Exiting because a job execution failed. Look above"))


def test_scheduling_rounds_are_left_out_and_agentab_lines_kept() -> None:
    found = ExpectedFailures()
    assert not found.filter(record("Select jobs to execute...", logging.INFO))
    assert not found.filter(record("Execute 12 jobs...", logging.INFO))
    assert found.filter(record("agentab: 3/4 runs · 0 faults", logging.INFO))
    assert found.filter(record("Complete log(s): .snakemake/log/x.snakemake.log", logging.INFO))


def handlers(tmp_path, quiet):
    logger = logging.getLogger(f"test-output-{id(quiet)}-{tmp_path.name}")
    terminal = logging.StreamHandler()
    disk = logging.FileHandler(tmp_path / "x.snakemake.log")
    for handler in (terminal, disk):
        handler.addFilter(DefaultFilter(quiet, False, False, False, False))
        logger.addHandler(handler)
    return logger, terminal, disk


def test_the_log_on_disk_is_full_and_the_terminal_quiet(tmp_path) -> None:
    quiet = set(QUIET)  # one set, shared by both handlers' filters as Snakemake does
    logger, terminal, disk = handlers(tmp_path, quiet)
    added = shape_output(dry=False, logger=logger)
    assert disk.filters[0].quiet == set()
    assert terminal.filters[0].quiet == QUIET
    assert added in terminal.filters and added not in disk.filters
    disk.close()


def test_a_dry_run_shows_the_job_table(tmp_path) -> None:
    logger, terminal, disk = handlers(tmp_path, set(QUIET))
    assert shape_output(dry=True, logger=logger) is None
    assert terminal.filters[0].quiet == {Quietness.RULES, Quietness.HOST}
    disk.close()


def test_the_full_listing_asked_for_is_left_as_it_is(tmp_path) -> None:
    logger, terminal, disk = handlers(tmp_path, {Quietness.HOST})  # --quiet host
    assert shape_output(dry=False, logger=logger) is None
    assert terminal.filters == [terminal.filters[0]]
    disk.close()
