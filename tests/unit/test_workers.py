"""The synthesis's jobs on forked workers: the same results, in order, as in one process."""

from __future__ import annotations

import os
import threading

import pytest

from agentab import workers
from agentab.synthesis.synthesize import synthesize
from tests.unit.test_synthesis_outputs import fabricated, outputs


def test_jobs_run_in_other_processes_and_come_back_in_order():
    jobs = [lambda value=value: (value, os.getpid()) for value in range(12)]
    found = workers.run_jobs(jobs, workers=2)
    assert [value for value, _ in found] == list(range(12))
    assert {pid for _, pid in found}.isdisjoint({os.getpid()})


def test_a_jobs_error_reaches_the_caller():
    def broken():
        raise ValueError("no such group")

    with pytest.raises(ValueError, match="no such group"):
        workers.run_jobs([lambda: 1, broken], workers=2)


def test_a_process_with_another_thread_does_not_fork():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not workers.can_fork()
        assert workers.worker_count(10) == 0
        assert workers.run_jobs([os.getpid] * 3) == [os.getpid()] * 3
    finally:
        stop.set()
        other.join()


def test_run_all_hands_out_the_costliest_first_and_assembles_each_work_in_its_order():
    started = []

    def job(name):
        started.append(name)
        return name

    first = workers.Work([lambda: job("a"), lambda: job("b")], [1, 5], lambda found: found)
    second = workers.Work([lambda: job("c")], [3], lambda found: "".join(found))
    assert workers.run_all([first, second]) == [["a", "b"], "c"]
    assert started == ["b", "c", "a"]  # in this process: in the order they were handed out


@pytest.mark.slow  # two syntheses of a scenario with several tasks: about 7 s
def test_the_number_of_workers_changes_no_byte(tmp_path, monkeypatch):
    """A scenario with several tasks (pooled shuffles, per-task intervals, pass^k, the
    frontier), synthesized in one process and on two workers."""
    folder = fabricated("bench_synthesize_tasks", tmp_path / "results")
    inputs = set(outputs(folder))
    monkeypatch.setattr(workers, "worker_count", lambda jobs: 0)
    synthesize(folder)
    alone = {name: sha for name, sha in outputs(folder).items() if name not in inputs}
    assert "gaps.csv" in alone and "frontier.svg" in alone
    forks = []
    monkeypatch.setattr(workers, "COST_WORTH_A_FORK", 0)
    monkeypatch.setattr(workers, "worker_count", lambda jobs: forks.append(jobs) or 2)
    for name in alone:
        (folder / name).unlink()
    synthesize(folder)
    assert forks, "the synthesis asked for no workers"
    assert {name: sha for name, sha in outputs(folder).items() if name not in inputs} == alone


def test_usable_cores_are_this_processs_allocation():
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no processor affinity on this platform")
    assert workers.usable_cores() == len(os.sched_getaffinity(0))


def test_a_worker_that_dies_leaves_its_jobs_to_this_process():
    parent = os.getpid()

    def dies_in_a_worker(value):
        if os.getpid() != parent:
            os._exit(1)  # as the out-of-memory killer would end it
        return value

    jobs = [lambda value=value: dies_in_a_worker(value) for value in range(4)]
    assert workers.run_jobs(jobs, workers=2) == [0, 1, 2, 3]
