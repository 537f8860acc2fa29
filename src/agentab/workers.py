"""Independent jobs spread over the processor's cores, in forked processes (the synthesis's).

A job (the verdicts of one metric's gaps, one rate's pass^k) reads only what the synthesis had
computed before the jobs started, and draws from random streams of its own, so its result is
the same in a worker as in the synthesis's own process: the outputs do not depend on how many
cores ran them (a test compares both ways, byte for byte).

Workers are forked, so a job needs nothing pickled but its result. A fork is taken only from a
process with one thread (a lock another thread held at the fork would stay locked in the child)
and where the platform forks; otherwise, and on one core, the jobs run one after the other in
the calling process, as they do again if a worker dies (killed, out of memory). Threads are no
help here: what a job spends is short numpy calls and Python between them, which the
interpreter lock serializes.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

Result = TypeVar("Result")

# More workers than this gain nothing on the synthesis's sizes: a job is tens of milliseconds.
MOST_WORKERS = 4
# Below this total cost (about as many arrays of 10 000 draws) the work is done before the
# workers would have started.
COST_WORTH_A_FORK = 100
_JOBS: Sequence[Callable[[], object]] = ()


def usable_cores() -> int:
    """The cores this process may run on (a cluster job's allocation, not the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether this process may fork: the platform forks, and no other thread could hold a lock."""
    return hasattr(os, "fork") and threading.active_count() == 1


def worker_count(jobs: int) -> int:
    """How many worker processes `jobs` jobs get here: 0 to run them in this process."""
    workers = min(usable_cores(), MOST_WORKERS, jobs)
    return workers if workers >= 2 and can_fork() else 0


def run_jobs(jobs: Sequence[Callable[[], Result]], workers: int | None = None) -> list[Result]:
    """Each job's result, in the jobs' order. Give the longest jobs first: they are handed out
    in order, one at a time, to whichever worker is free. `workers` = 0 runs everything here."""
    global _JOBS
    workers = worker_count(len(jobs)) if workers is None else workers
    if workers == 0:
        return [job() for job in jobs]
    _JOBS = jobs  # what the forked workers find, unpickled
    # Objects made before the fork are left out of the collector's passes: a pass in a worker
    # would touch every one of them and copy the synthesis's memory page by page.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    gc.freeze()
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            pending = [pool.submit(_run_job, index) for index in range(len(jobs))]
            try:
                return [future.result() for future in pending]
            except BrokenProcessPool:  # a worker died: what it held is done here
                return [job() for job in jobs]
    finally:
        _JOBS = ()
        gc.unfreeze()


@dataclass(frozen=True)
class Work:
    """Jobs, what each costs (about as many arrays of 10 000 draws as it makes: the costliest
    go first, and a small total stays in this process), and how their results, in the jobs'
    order, make the answer."""

    jobs: Sequence[Callable[[], object]]
    costs: Sequence[float]
    assemble: Callable[[list], object]


def run_all(works: Sequence[Work]) -> list:
    """Each work's answer, every job of every work run together, the costliest first."""
    jobs = [job for work in works for job in work.jobs]
    costs = [cost for work in works for cost in work.costs]
    order = sorted(range(len(jobs)), key=lambda index: -costs[index])
    count = worker_count(len(jobs)) if sum(costs) >= COST_WORTH_A_FORK else 0
    results: list = [None] * len(jobs)
    ordered = run_jobs([jobs[i] for i in order], count)
    for index, found in zip(order, ordered, strict=True):
        results[index] = found
    answers, start = [], 0
    for work in works:
        answers.append(work.assemble(results[start : start + len(work.jobs)]))
        start += len(work.jobs)
    return answers


def _run_job(index: int):
    return _JOBS[index]()
