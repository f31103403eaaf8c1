"""``python -m autograder grade``: grade a whole class, in parallel, and write everything out.

    python -m autograder grade ASSIGNMENT SUBMISSIONS --out OUT [--jobs N] [--timeout S] [--memory MB]

1. collect the submissions (collect.py): one per student, or a status saying why there is none;
2. make sure nbgrader's gradebook knows the assignment (gradebook.py);
3. grade them, N at a time: each worker process (spawned once, torch and numpy imported once)
   grades one submission after another (runner.py), each in a fresh sandbox of its own
   (one sandbox user per worker), the next one's sandbox starting while the current one is
   graded;
4. as each result arrives, keep its scores and autograded notebook in the gradebook, then its
   record in ``OUT/results/`` (written atomically, last: records.py);
5. write ``OUT/grades.csv``, ``OUT/details.csv`` and the feedback pages from every record of
   the assignment in OUT, with the grades people entered in the gradebook (rebuild.py), and
   print a summary.

A run resumes: a submission whose finished record says it was graded from the same notebook,
assignment, grader and options is not graded again (``force`` regrades everyone,
``retry_failed`` regrades the submissions that could not be graded), and what a killed run
left behind is cleaned first (leftovers.py).

The exit status is 0 when every submission got its row; 1 when the grader failed on some
submission (status ``grader_error``, a bug to report); 2 when it could not run at all.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from tqdm import tqdm

from autograder import course
from autograder.grading import collect, gradebook, leftovers, records, report, slots
from autograder.grading.jail import sandbox_problem
from autograder.grading.rebuild import missing, rebuild
from autograder.grading.runner import CellGrade, Options, Result
from autograder.grading.spares import SparePool

DEFAULT_WORK = course.GRADING_WORK  # as in autograder/nbgrader_config.py

# ---- worker processes ---------------------------------------------------------------------------


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
    from autograder.grading.sanitize import load_template

    template = load_template(assignment)
    cells = [
        CellGrade(gid, "test", 0.0, test.points, status, hidden=test.hidden) for gid, test in template.tests.items()
    ]
    cells += [CellGrade(gid, "written", 0.0, w[1], status) for gid, w in template.written.items()]
    cells.sort(key=lambda cell: template.indices[cell.grade_id])
    return Result(submission.student_id, assignment, status, sorted(set(submission.flags)),
                  [*submission.notes, *notes], cells, None, 0.0, submission.source)  # fmt: skip


# ---- progress ----------------------------------------------------------------------------------------


# ---- the whole class ---------------------------------------------------------------------------------


@contextlib.contextmanager
def worker_pool(jobs: int):
    """``jobs`` grading workers (spawned: a clean process each, torch imported once, one sandbox slot each)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_init_worker) as pool:
        yield pool


def grade_class(
    assignment: str,
    submissions: Path,
    out: Path,
    jobs: int = 1,
    options: Options | None = None,
    work: Path = DEFAULT_WORK,
    quiet: bool = False,
    pool: ProcessPoolExecutor | None = None,
    *,
    force: bool = False,
    retry_failed: bool = False,
    lms: str = "auto",
    id_from: str = "name",
    roster: set[str] | None = None,
    due: str | None = None,
    scheduler: str | None = None,
    tls: Path | None = None,
) -> int:
    """Grade every submission of ``assignment`` under ``submissions`` into ``out``; the exit status.

    ``pool`` (from :func:`worker_pool`) lets several calls share their workers. A submission whose
    finished record is up to date is skipped unless ``force`` (or ``retry_failed``, for the ones that
    could not be graded); ``lms``/``id_from``: collect.collect; ``roster``: the course's student ids;
    ``due``: the due date, written to the gradebook. ``scheduler``: the address of a Dask scheduler
    (``tls://host:port``) whose workers grade instead of ``jobs`` local ones, ``tls`` the folder of the
    certificates (engine.py); then the sandboxes are the workers', and this process needs no root."""
    options = options or Options()
    if scheduler is not None:
        from autograder.grading import engine

        if problem := engine.address_problem(scheduler, tls):
            print(f"error: {problem}", file=sys.stderr)
            return 2
    elif not options.unsafe and (problem := sandbox_problem()):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    out, work = Path(out), Path(work)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        found = collect.collect(Path(submissions), assignment, lms, id_from)
    except (OSError, ValueError) as exc:  # not a folder, not a zip, unreadable
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # (a shared pool's spare sandboxes are alive, not left over; a cluster's workers clean their own machines)
    if pool is None and scheduler is None and not options.unsafe:
        for line in leftovers.sweep():
            print(f"cleaned up after a killed run: {line}", file=sys.stderr)
    records.clean_partial(out)
    gradebook.ensure_assignment(work, assignment)
    scratch = Path(tempfile.mkdtemp(prefix=leftovers.PREFIX, dir=leftovers.SCRATCH_PARENT))  # short: Unix sockets
    leftovers.claim(scratch)
    options.workdir = scratch
    results: list[Result] = []
    todo, skipped = _todo(found, out, assignment, options, force, retry_failed)
    # tqdm's bar on a terminal; nothing in CI or a log (disable=None: only when stderr is a terminal)
    progress = tqdm(total=len(todo), desc=f"grading {assignment}", unit="notebook", disable=None)
    by_student = {s.student_id: s for s in found}

    def keep(result: Result) -> None:
        results.append(result)
        gradebook.record(work, result)
        submission = by_student[result.student_id]
        record = report.record_of(result)
        record.update(timestamp=submission.timestamp, lms_late=submission.lms_late, secret=submission.secret,
                      graded_from=records.graded_from(submission.data, assignment, options))  # fmt: skip
        records.save(out, record)  # last: a record exists only for a submission graded to the end
        progress.set_postfix_str(result.student_id[:30], refresh=False)
        progress.update(1)

    try:
        pending = []
        for submission in todo:
            if submission.status != "graded":
                keep(failed_result(submission, assignment, submission.status))
            else:
                pending.append(submission)
        if scheduler is not None:  # the Dask workers grade (a task whose workers all died comes back failed)
            try:
                engine.grade_on_cluster(scheduler, tls, pending, assignment, options, keep)
            except OSError as exc:  # no scheduler there, or it refused this process's certificate
                print(f"error: the Dask scheduler {scheduler}: {exc}", file=sys.stderr)
                return 2
            pending = []
        for _attempt in range(2):  # a worker that dies takes its pool down: retry the rest once
            if not pending:
                break
            if pool is not None and _attempt == 0:
                pending = _run(pool, pending, assignment, options, keep)
            else:
                with worker_pool(jobs) as fresh:
                    pending = _run(fresh, pending, assignment, options, keep)
        for submission in pending:
            keep(failed_result(submission, assignment, "grader_error", ["a grading worker crashed twice"]))
    finally:
        progress.close()
        shutil.rmtree(scratch, ignore_errors=True)

    graded = rebuild(out, work, assignment, roster, due)
    if not quiet:
        _summary(results, out, time.monotonic() - started, skipped, missing(graded, roster))
    now = {r["student_id"]: r["status"] for r in graded}
    return 1 if any(now.get(s.student_id) == "grader_error" for s in found) else 0


def _todo(found, out, assignment, options, force, retry_failed) -> tuple[list, int]:
    """The submissions to grade now, and how many are skipped (graded already, from the same input).
    A skipped submission's record gets its time of submission again (the same bytes handed in again)."""
    todo, skipped = [], 0
    for submission in found:
        record = records.load(out, submission.student_id)
        key = records.graded_from(submission.data, assignment, options)
        if force or not records.up_to_date(record, key, retry_failed):
            todo.append(submission)
            continue
        skipped += 1
        now = dict(timestamp=submission.timestamp, lms_late=submission.lms_late, secret=submission.secret)
        if any(record.get(k) != v for k, v in now.items()):
            record.update(now)
            records.save(out, record)
    return todo, skipped


def spares_ahead(position: int, total: int, jobs: int, cores: int | None = None) -> int:
    """How many sandboxes the worker grading submission ``position`` (of ``total``, in the order they are
    queued) should keep starting ahead: the submissions still queued behind it for its share of the
    ``jobs`` workers, and at most two when the workers leave a core free for them (one otherwise: on
    a machine the workers already fill, a second spare only competes with grading)."""
    cores = cores or len(os.sched_getaffinity(0))
    depth = 2 if 2 * jobs <= cores else 1
    return max(0, min(depth, (total - 1 - position) // jobs))


def _run(pool, pending, assignment, options, keep) -> list:
    """Grade ``pending`` in ``pool``; returns the submissions lost to a crashed worker."""
    lost = []
    try:
        # a worker starts the next submissions' sandboxes while it grades, as long as submissions wait
        # behind it (each spare is then taken by one of this worker's next submissions)
        jobs = getattr(pool, "_max_workers", 1)
        futures = {
            pool.submit(_grade_in_worker, s, assignment, options, spares_ahead(i, len(pending), jobs)): s
            for i, s in enumerate(pending)
        }
    except BrokenProcessPool:
        return pending
    for future in as_completed(futures):
        try:
            keep(future.result())
        except BrokenProcessPool:
            lost.append(futures[future])
    return sorted(lost, key=lambda s: s.student_id)


def _summary(results: list[Result], out: Path, seconds: float, skipped: int = 0, absent: list | None = None) -> None:
    statuses = Counter(r.status for r in results)
    flags = Counter(flag for r in results for flag in r.flags)
    graded = [r for r in results if r.status == "graded"]
    print(f"graded {len(results)} submission(s) in {seconds:.1f} s")
    if skipped:
        print(f"  skipped {skipped} graded already from the same input (--force regrades them)")
    if absent:
        print(f"  on the roster, nothing handed in: {', '.join(absent)}")
    print("  status: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    if flags:
        print("  flags:  " + ", ".join(f"{k} {v}" for k, v in sorted(flags.items())))
    if graded:
        mean = sum(r.score for r in graded) / len(graded)
        print(f"  mean automatic score of graded submissions: {mean:.2f} / {graded[0].max_score:g}")
    print(f"  {out / 'grades.csv'}, {out / 'details.csv'}, {out / 'feedback'}/")
