"""The grading worker processes: each grades one submission after another, in the sandbox.

A worker is a process of its own (spawned: torch and numpy imported once, one PyTorch thread), with a
sandbox slot claimed machine-wide (slots.py) and its spare sandboxes (spares.py). It ends within a
second of the process that started it. ``python -m autograder grade`` runs ``--jobs`` of them
(batch.py), and each Dask worker runs one (engine.py): the same code grades either way.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor

from autograder import course
from autograder.grading import collect, slots
from autograder.grading.runner import CellGrade, Options, Result
from autograder.grading.spares import SparePool


class _Worker:
    """What one worker process keeps between its submissions: its sandbox slot and its spare sandboxes."""

    def __init__(self, slot: int):
        self.slot = slot
        self.spares = SparePool()


_WORKER: _Worker | None = None  # set once in each worker process, by _init_worker


def _watch_parent() -> None:
    """A worker outlives a run killed with SIGKILL: it ends within a second of its run."""
    import threading

    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="watch-parent").start()


def _init_worker() -> None:
    """Runs once in each worker: take a sandbox slot (slots.py), import the heavy modules, one thread each."""
    global _WORKER
    _watch_parent()
    _WORKER = _Worker(slots.claim())
    if str(course.ROOT) not in sys.path:  # the hidden tests import autograder.reference
        sys.path.insert(0, str(course.ROOT))
    import numpy  # noqa: F401
    import torch

    torch.set_num_threads(1)
    from multiprocessing.util import Finalize

    Finalize(None, _WORKER.spares.close, exitpriority=10)  # the spare sandboxes go with the worker


def _grade_in_worker(submission: collect.Submission, assignment: str, options: Options, prestart: int) -> Result:
    from autograder.grading import runner

    try:
        result = runner.grade(submission.student_id, submission.data, assignment, options, _WORKER.slot,
                              submission.source, prestart, _WORKER.spares)  # fmt: skip
        result.flags = sorted(set(result.flags) | set(submission.flags))
        result.notes = [*submission.notes, *result.notes]
        return result
    except Exception:
        return failed_result(submission, assignment, "grader_error", [traceback.format_exc(limit=8)])


def failed_result(submission: collect.Submission, assignment: str, status: str, notes=()) -> Result:
    """The row of a submission that could not be graded: every graded cell scores 0."""
    from autograder.grading.template import load_template

    template = load_template(assignment)
    cells = [
        CellGrade(gid, "test", 0.0, test.points, status, hidden=test.hidden) for gid, test in template.tests.items()
    ]
    cells += [CellGrade(gid, "written", 0.0, w[1], status) for gid, w in template.written.items()]
    cells.sort(key=lambda cell: template.indices[cell.grade_id])
    return Result(submission.student_id, assignment, status, sorted(set(submission.flags)),
                  [*submission.notes, *notes], cells, None, 0.0, submission.source)  # fmt: skip


@contextlib.contextmanager
def worker_pool(jobs: int):
    """``jobs`` grading workers (spawned: a clean process each, torch imported once, one sandbox slot each)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_init_worker) as pool:
        yield pool


def spares_ahead(position: int, total: int, jobs: int, cores: int | None = None) -> int:
    """How many sandboxes the worker grading submission ``position`` (of ``total``, in the order they are
    queued) should keep starting ahead: the submissions still queued behind it for its share of the
    ``jobs`` workers, and at most two when the workers leave a core free for them (one otherwise: on
    a machine the workers already fill, a second spare only competes with grading)."""
    cores = cores or len(os.sched_getaffinity(0))
    depth = 2 if 2 * jobs <= cores else 1
    return max(0, min(depth, (total - 1 - position) // jobs))
