"""The progress line in runs: its wording, and the counting from the run folders."""

from __future__ import annotations

import errno
import io
import json
import os
import shlex
import shutil
import time
from pathlib import Path

from agentab import errors
from agentab.workflow.progress import (
    Progress,
    RunCounter,
    Snapshot,
    count,
    duration,
    failure_advice,
    progress_line,
)


def snapshot(measured=0, total=40, faults=0, tokens=0, cost=0.0, priced=0, offline=0):
    return Snapshot(total, measured, faults, tokens, cost, priced, offline)


def test_the_line_says_runs_faults_time_left_and_tokens() -> None:
    start = snapshot(measured=0)
    now = snapshot(measured=12, tokens=180_000)
    line = progress_line(now, start, elapsed_s=70)
    # 28 runs left at 70 s per 12 runs: 163 s
    assert line == "agentab: 12/40 runs · 0 faults · 1m10s · ~3m left · 180k tokens"


def test_the_estimate_uses_the_pace_of_this_invocation_only() -> None:
    start = snapshot(measured=30)  # measured before this invocation
    assert "left" not in progress_line(snapshot(measured=30), start, 10)
    assert "~1m left" in progress_line(snapshot(measured=31), start, 9)  # 9 runs × 9 s
    assert "left" not in progress_line(snapshot(measured=40), start, 100)  # done


def test_faults_are_counted_since_the_start() -> None:
    line = progress_line(snapshot(measured=1, faults=3), snapshot(faults=2), 5)
    assert " · 1 fault · " in line


def test_cost_only_where_a_provider_reports_one() -> None:
    offline = snapshot(measured=4, offline=4, tokens=950)
    assert progress_line(offline, snapshot(), 5).endswith("950 tokens · no cost (offline model)")
    assert "USD" not in progress_line(offline, snapshot(), 5)
    priced = snapshot(measured=4, offline=2, priced=2, cost=1.234)
    assert progress_line(priced, snapshot(), 5).endswith(" · 1.23 USD")
    unreported = snapshot(measured=4)
    assert progress_line(unreported, snapshot(), 5).endswith(" tokens")


def test_durations_and_counts_read_as_a_person_writes_them() -> None:
    assert [duration(s) for s in (0, 41.4, 70, 3599, 7500)] == [
        "0s",
        "41s",
        "1m10s",
        "59m59s",
        "2h05m",
    ]
    assert [duration(s, coarse=True) for s in (40, 163, 150)] == ["40s", "3m", "3m"]
    assert [count(n) for n in (950, 1234, 48_000, 180_400, 2_345_678)] == [
        "950",
        "1.2k",
        "48k",
        "180k",
        "2.3M",
    ]


def write_measures(folder: Path, provider="offline", cost=0.0, tokens=(100, 20)) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    provenance = {
        "provider": provider,
        "cost_usd": cost,
        "tokens": {"input": tokens[0], "output": tokens[1]},
    }
    (folder / "measures.json").write_text(json.dumps({"provenance": provenance}))


def test_counting_reads_measures_and_fault_lines(tmp_path: Path) -> None:
    folders = [tmp_path / "runs" / "a" / f"r{n:02d}" for n in range(1, 5)]
    write_measures(folders[0], cost=0.0)  # offline, unpriced: it costs nothing
    write_measures(folders[1], provider="anthropic", cost=0.25, tokens=(1000, 200))
    folders[2].mkdir(parents=True)
    (folders[2] / "faults.jsonl").write_text('{"reason": "529"}\n{"reason": "crash"}\n\n')
    now = RunCounter(folders).snapshot()
    assert (now.total, now.measured, now.faults, now.tokens) == (4, 2, 2, 1320)
    assert (now.priced_runs, now.cost_usd, now.offline_runs) == (1, 0.25, 1)


def test_a_priced_offline_policy_costs_what_its_runs_report(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "a" / "r01"
    write_measures(folder, cost=0.8)  # `[policy] price`: the offline model costs something
    now = RunCounter([folder]).snapshot()
    assert (now.priced_runs, now.cost_usd) == (1, 0.8)


def test_runs_the_budget_did_not_start_are_counted_apart_with_the_spend(tmp_path: Path) -> None:
    folders = [tmp_path / "runs" / "a" / f"r{n:02d}" for n in range(1, 4)]
    write_measures(folders[0], provider="anthropic", cost=0.03)
    folders[1].mkdir(parents=True)
    (folders[1] / "measures.json").write_text(json.dumps({"status": "not-started"}))
    ledger = tmp_path / "budget.json"
    ledger.write_text(json.dumps({"spent": [{"run": "a/r01", "usd": 0.04, "end": "outcome"}]}))
    counter = RunCounter(folders, budgets=((ledger, 0.05),))
    now = counter.snapshot()
    assert (now.measured, now.not_started, now.budget) == (1, 1, (0.04, 0.05))
    line = progress_line(now, now, 10.0)
    assert "1/3 runs" in line
    assert "1 not started (budget reached)" in line
    assert "spent 0.0400 of 0.0500 USD budget" in line


def test_a_line_is_printed_when_the_count_changes_and_only_then(tmp_path: Path) -> None:
    folders = [tmp_path / f"r{n:02d}" for n in range(1, 3)]
    out = io.StringIO()
    clock = iter([0.0, 10.0, 20.0, 30.0]).__next__  # read only when a line is printed
    progress = Progress(folders, out=out, clock=clock)
    assert progress.tick() == "agentab: 0/2 runs · 0 faults · 10s · 0 tokens"
    assert progress.tick() is None  # nothing changed: nothing printed
    write_measures(folders[0])
    assert progress.tick().startswith("agentab: 1/2 runs · 0 faults · 20s · ~20s left")
    write_measures(folders[1])
    progress.stop()
    assert out.getvalue().splitlines()[-1] == (
        "agentab: 2/2 runs · 0 faults · 30s · 240 tokens · no cost (offline model)"
    )


def test_the_thread_prints_as_runs_are_measured(tmp_path: Path) -> None:
    folders = [tmp_path / "r01"]
    out = io.StringIO()
    progress = Progress(folders, out=out, interval_s=0.05).begin()
    write_measures(folders[0])
    deadline = time.monotonic() + 5
    while "1/1 runs" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.02)
    progress.stop()
    assert "agentab: 0/1 runs" in out.getvalue() and "agentab: 1/1 runs" in out.getvalue()


def snakemake_log(tmp_path: Path, *statuses: int) -> list[str]:
    """Snakemake's log of an invocation whose shell jobs failed with these exit statuses."""
    log = tmp_path / "x.snakemake.log"
    log.write_text(
        "".join(
            "RuleException:\nCalledProcessError in file rules/run.smk, line 9:\n"
            f"Command 'set -euo pipefail;  python -m agentab.steps.run' returned non-zero exit "
            f"status {status}.\n"
            for status in statuses
        )
    )
    return [str(log)]


def test_a_user_error_gets_no_advice_to_run_the_same_command_again(tmp_path: Path) -> None:
    advice = failure_advice(snakemake_log(tmp_path, 2))
    assert advice == (
        "agentab: 1 job stopped on an error a person must fix: its message above names the "
        "file, the key and the fix; until it is fixed, every invocation stops on it the same way."
    )
    assert "same command" not in failure_advice(snakemake_log(tmp_path, 3, 2))
    assert "also redoes 1 job that faulted" in failure_advice(snakemake_log(tmp_path, 3, 2))


def test_faults_and_stops_are_redone_by_running_the_same_command(tmp_path: Path) -> None:
    assert failure_advice(snakemake_log(tmp_path, 3, 143)) == (
        "agentab: 2 jobs faulted or were stopped: run the same command again to redo only "
        "what is missing."
    )
    assert "same command" not in failure_advice(snakemake_log(tmp_path, 1))


def test_a_full_disk_is_said_first_whatever_the_jobs_logs_hold(tmp_path: Path, monkeypatch) -> None:
    results = tmp_path / "results" / "demo"
    results.mkdir(parents=True)
    monkeypatch.setattr(
        errors.shutil, "disk_usage", lambda folder: shutil._ntuple_diskusage(4, 4, 0)
    )
    advice = failure_advice(snakemake_log(tmp_path, 1), [results])
    assert advice.startswith(f"agentab: {results}: no space left on its disk (a person must act")
    assert "fix: free space on that disk" in advice


def test_an_oserror_of_a_full_disk_or_a_read_only_folder_becomes_a_sentence() -> None:
    full = errors.storage_error(OSError(errno.ENOSPC, "No space left", "results/x.json"))
    assert "results/x.json: no space left on its disk" in full.render()
    read_only = errors.storage_error(OSError(errno.EROFS, "Read-only", "results/x.json"))
    assert "its folder results cannot be written: read-only" in read_only.render()
    assert errors.storage_error(OSError(errno.EIO, "I/O error", "x")) is None


def test_on_a_rerun_the_measures_to_be_made_again_count_once_made(tmp_path: Path) -> None:
    folders = [tmp_path / f"r{n:02d}" for n in range(1, 4)]
    for folder in folders:
        write_measures(folder)
        os.utime(folder / "measures.json", (1_000_000, 1_000_000))  # made before the edit
    out = io.StringIO()
    redone = [folders[0] / "measures.json", folders[1] / "measures.json"]
    progress = Progress(folders, out=out, clock=iter([0.0, 10.0, 20.0]).__next__, redone=redone)
    assert progress.tick().startswith("agentab: 1/3 runs")  # r03 is not redone
    write_measures(folders[0])  # made again, now
    assert progress.tick().startswith("agentab: 2/3 runs · 0 faults · 20s · ~20s left")


def test_each_failed_job_says_its_reason_from_its_own_log(tmp_path: Path) -> None:
    # As profiles/quiet leaves the failed jobs' logs out: the reason is said anyway.
    logs = [tmp_path / "runs" / "a b" / "run.log", tmp_path / "runs" / "c" / "validate.log"]
    for log in logs:
        log.parent.mkdir(parents=True)
    logs[0].write_text("starting\n\nfault (the job will be redone): the etalon's setup\nfailed\n")
    logs[1].write_text("")  # a job that said nothing: no line of its own
    snakemake = tmp_path / "x.snakemake.log"
    snakemake.write_text(
        "".join(
            "RuleException:\nCalledProcessError in file rules/run.smk, line 9:\n"
            f"Command 'set -euo pipefail;  python -m agentab.steps.run > {shlex.quote(str(log))}"
            " 2>&1' returned non-zero exit status 3.\n"
            for log in logs
        )
    )
    assert failure_advice([str(snakemake)]).splitlines() == [
        f"agentab: {logs[0]}: fault (the job will be redone): the etalon's setup failed",
        "agentab: 2 jobs faulted or were stopped: run the same command again to redo only what "
        "is missing.",
    ]


def test_a_sequential_scenario_shows_its_wave_beside_the_budget(tmp_path: Path) -> None:
    waves = tmp_path / "waves"
    waves.mkdir()
    counter = RunCounter([], waves=((waves, 6),))
    assert counter.snapshot().wave == (1, 6)
    (waves / "wave-1.json").write_text("{}")
    (waves / "wave-2.json").write_text("{}")
    now = counter.snapshot()
    now.budget = (1.5, 10.0)
    line = progress_line(now, snapshot(), 5)
    assert " · wave 3/6 · spent 1.50 of 10.00 USD budget" in line
