"""A class graded by Dask distributed's workers: ``grade ... --scheduler tls://HOST:PORT --tls DIR``.

The coordinator (the ``grade`` process, batch.py) collects, skips what is graded already, and hands
each remaining submission to the scheduler as one task, :func:`grade_task`; as each finishes it
keeps the Result that came back (as data) in the gradebook and OUT/, exactly as with local workers:
only the coordinator writes anything. Each Dask worker (one process, one thread) grades in a
grading process of its own, the one batch.py's ``--jobs`` workers use (``batch.worker_pool(1)``:
torch imported once, a sandbox slot claimed machine-wide (slots.py), its spare sandboxes, the time
limit in its main thread), in the same sandbox with the same limits, as root on the worker.

- The worker's grader must be the coordinator's: each task carries the coordinator's grader and
  assignment digests (records.py); a worker whose files differ grades nothing and returns a
  ``grader_error`` that says so.
- Nothing is lost: an exception in a task is a ``grader_error`` Result (batch._grade_in_worker); a
  worker that dies mid-task has its tasks rescheduled by the scheduler on the others; a task whose
  workers died ``ALLOWED_FAILURES + 1`` times (KilledWorker) comes back as a ``grader_error`` with
  that note. Nothing is doubled: a task run twice gives the coordinator one result (one future),
  and records and gradebook entries are keyed by student (written over, never added).
- Mutual TLS only: a Dask scheduler runs whatever pickled function any connected client sends it,
  as root on the workers. Every party (scheduler, workers, this client) holds a certificate of the
  course's own CA (certs.py, ``python -m autograder dask-certs DIR``) and encryption is required;
  a ``tcp://`` scheduler is refused (:func:`address_problem`).

:func:`local_cluster` starts a scheduler and workers as real processes on the loopback interface
(the tests, the benchmark, one machine with many cores).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path

from autograder import course
from autograder.grading import leftovers, records

CA = "ca.pem"
ALLOWED_FAILURES = 2  # a task survives two dead workers; the third death makes it a KilledWorker
# what every party of a grading cluster runs with (the scheduler's allowed failures; encryption required)
ENVIRONMENT = {
    "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True",
    "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(ALLOWED_FAILURES),
}
CONNECT_S = 60
START_S = 180


def tls_files(tls_dir: Path, party: str) -> tuple[Path, Path, Path]:
    """The CA certificate, and the certificate and key of ``party`` (scheduler, worker, client)."""
    tls_dir = Path(tls_dir)
    return tls_dir / CA, tls_dir / f"{party}.pem", tls_dir / f"{party}-key.pem"


def tls_arguments(tls_dir: Path, party: str) -> list[str]:
    """The options of ``dask scheduler`` and ``dask worker`` that make them speak mutual TLS."""
    ca, cert, key = tls_files(tls_dir, party)
    return ["--tls-ca-file", str(ca), "--tls-cert", str(cert), "--tls-key", str(key)]


def scheduler_arguments(tls_dir: Path) -> list[str]:
    """The options of ``dask scheduler`` in a grading cluster, here and in deploy/dask/ (no dashboard: it
    would be one more door)."""
    return ["--protocol", "tls", "--no-dashboard", *tls_arguments(tls_dir, "scheduler")]


def worker_arguments(tls_dir: Path) -> list[str]:
    """The options of ``dask worker`` in a grading cluster, here and in deploy/dask/: one process (no nanny) and
    one thread, grading one submission at a time; no memory limit of Dask's (the sandbox has its own)."""
    return ["--nthreads", "1", "--nworkers", "1", "--no-nanny", "--no-dashboard", "--memory-limit", "0",
            *tls_arguments(tls_dir, "worker")]  # fmt: skip


def address_problem(address: str, tls_dir: Path | None) -> str | None:
    """Why the coordinator will not talk to this scheduler, or None."""
    if not address.startswith("tls://"):
        return (f"the Dask scheduler must be reached over mutual TLS (tls://HOST:PORT), not {address!r}: a "
                "scheduler runs whatever any connected client sends it, as root on the workers")  # fmt: skip
    if tls_dir is None:
        return "--scheduler needs --tls DIR: the course CA's ca.pem, client.pem, client-key.pem (dask-certs DIR)"
    absent = [str(path) for path in tls_files(tls_dir, "client") if not path.is_file()]
    return f"missing TLS file(s): {', '.join(absent)} (python -m autograder dask-certs DIR)" if absent else None


def security(tls_dir: Path, party: str = "client"):
    """distributed's Security of ``party``: its certificate, the course CA, encryption required."""
    from distributed.security import Security

    ca, cert, key = tls_files(tls_dir, party)
    return Security(tls_ca_file=str(ca), tls_client_cert=str(cert), tls_client_key=str(key), require_encryption=True)


def _expected(assignment: str) -> dict:
    """What a worker must grade with: the digests of the grader's code and of the assignment (records.py)."""
    return {"grader": records.grader_version(), "assignment": records.assignment_digest(assignment)}


# ---- the coordinator --------------------------------------------------------------------------------


def grade_on_cluster(address: str, tls_dir: Path, pending: list, assignment: str, options, keep) -> None:
    """Grade ``pending`` (collect.Submission) on the cluster's workers; ``keep(result)`` each Result as it
    arrives (batch.grade_class: the gradebook, then the record). Raises ConnectionError when the scheduler
    cannot be reached (or refuses this client's certificate)."""
    from distributed import Client, KilledWorker, as_completed

    from autograder.grading.batch import failed_result, spares_ahead

    expected, run = _expected(assignment), uuid.uuid4().hex[:8]
    try:
        client = Client(address, security=security(tls_dir), timeout=CONNECT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ConnectionError(f"could not connect over mutual TLS ({type(exc).__name__}: {exc})") from exc
    with client:
        workers = max(1, len(client.nthreads()))
        futures = {}
        for i, submission in enumerate(pending):  # one spare sandbox ahead per worker while work waits
            prestart = spares_ahead(i, len(pending), workers, cores=workers)
            future = client.submit(grade_task, submission, assignment, options, prestart, expected,
                                   key=f"grade-{run}-{submission.student_id}", retries=0)  # fmt: skip
            futures[future] = submission
        for future in as_completed(futures, loop=client.loop):
            submission = futures.pop(future)
            try:
                result = future.result()
            except KilledWorker:
                note = (f"the Dask workers grading it died {ALLOWED_FAILURES + 1} times in turn (KilledWorker); "
                        "see the workers' logs, then --retry-failed")  # fmt: skip
                result = failed_result(submission, assignment, "grader_error", [note])
            except BaseException as exc:  # noqa: B036 - a cancelled or undeliverable task: never a lost row
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                result = failed_result(submission, assignment, "grader_error", [traceback.format_exc(limit=4)])
            keep(result)


# ---- the workers ------------------------------------------------------------------------------------


class _WorkerState:
    """What one Dask worker process keeps: its scratch folder (claimed, so that leftovers.sweep on this
    machine knows it is alive) and its grading process, started at the first task."""

    def __init__(self):
        if os.geteuid() == 0:
            leftovers.sweep()  # what dead workers and runs left on this machine
        self.scratch = Path(tempfile.mkdtemp(prefix=leftovers.PREFIX, dir=leftovers.SCRATCH_PARENT))
        leftovers.claim(self.scratch)
        self.stack = contextlib.ExitStack()
        self.pool = None
        self.problems: dict[bool, str | None] = {}
        atexit.register(self.close)

    def sandbox_problem(self, unsafe: bool) -> str | None:
        if unsafe not in self.problems:
            from autograder.grading.jail import sandbox_problem

            self.problems[unsafe] = None if unsafe else sandbox_problem()
        return self.problems[unsafe]

    def grading_pool(self):
        if self.pool is None:
            from autograder.grading.batch import worker_pool

            self.pool = self.stack.enter_context(worker_pool(1))
        return self.pool

    def reset(self) -> None:
        """The grading process died: the next task starts a fresh one."""
        self.stack.close()
        self.stack, self.pool = contextlib.ExitStack(), None

    def close(self) -> None:
        self.stack.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


_STATE: _WorkerState | None = None
_LOCK = threading.Lock()


def grade_task(submission, assignment: str, options, prestart: int, expected: dict):
    """The task a Dask worker runs for one submission: its Result, never an exception."""
    from autograder.grading.batch import _grade_in_worker, failed_result

    global _STATE
    host = socket.gethostname()
    mine = _expected(assignment)
    if mine != expected:
        differs = " and ".join(k for k in mine if mine[k] != expected.get(k))
        note = (f"not graded: the Dask worker on {host} has another {differs} than the coordinator "
                f"({mine} against {expected}); install the same course on every worker")  # fmt: skip
        return failed_result(submission, assignment, "grader_error", [note])
    with _LOCK:
        _STATE = _STATE or _WorkerState()
        if problem := _STATE.sandbox_problem(options.unsafe):
            return failed_result(submission, assignment, "grader_error", [f"the Dask worker on {host}: {problem}"])
        options = dataclasses.replace(options, workdir=_STATE.scratch)  # this machine's, not the coordinator's
        from concurrent.futures.process import BrokenProcessPool

        for _attempt in range(2):
            try:
                future = _STATE.grading_pool().submit(_grade_in_worker, submission, assignment, options, prestart)
                return future.result()
            except BrokenProcessPool:
                _STATE.reset()
        return failed_result(submission, assignment, "grader_error", [f"the grading process on {host} crashed twice"])


# ---- a cluster on this machine ----------------------------------------------------------------------


def _start(command: list[str], log: Path, allowed_failures: int) -> subprocess.Popen:
    path = [str(course.ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, **ENVIRONMENT, "PYTHONPATH": os.pathsep.join(path),
           "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(allowed_failures)}  # fmt: skip
    with open(log, "wb") as handle:
        return subprocess.Popen(command, cwd=course.ROOT, env=env, stdin=subprocess.DEVNULL, stdout=handle,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip


def _tail(log: Path) -> str:
    with contextlib.suppress(OSError):
        return log.read_text(errors="replace")[-3000:]
    return ""


def _stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        with contextlib.suppress(OSError):
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 30
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextlib.contextmanager
def local_cluster(workers: int, tls_dir: Path, *, allowed_failures: int = ALLOWED_FAILURES):
    """A Dask scheduler and ``workers`` workers (one process, one thread each), started as processes of their
    own on 127.0.0.1 with the certificates of ``tls_dir`` (certs.py); yields the scheduler's address once
    every worker is connected, and stops them all on exit (then cleans what a killed worker left).
    ``allowed_failures``: the scheduler's, how many dead workers a task survives."""
    from distributed import Client

    folder = Path(tempfile.mkdtemp(prefix="ag-dask-"))
    dask = [sys.executable, "-m", "dask"]
    processes: list[subprocess.Popen] = []
    try:
        scheduler_file = folder / "scheduler.json"
        command = [*dask, "scheduler", *scheduler_arguments(tls_dir), "--host", "127.0.0.1", "--port", "0",
                   "--scheduler-file", str(scheduler_file)]  # fmt: skip
        processes.append(_start(command, folder / "scheduler.log", allowed_failures))
        deadline, address = time.monotonic() + START_S, None
        while address is None:
            try:
                address = json.loads(scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):  # not written yet, or not whole
                if processes[0].poll() is not None or time.monotonic() > deadline:
                    log = _tail(folder / "scheduler.log")
                    raise RuntimeError(f"the Dask scheduler did not start:\n{log}") from None
                time.sleep(0.2)
        for n in range(workers):
            (folder / f"worker-{n}").mkdir()
            command = [*dask, "worker", address, *worker_arguments(tls_dir), "--name", f"grader-{n}",
                       "--host", "127.0.0.1", "--local-directory", str(folder / f"worker-{n}")]  # fmt: skip
            processes.append(_start(command, folder / f"worker-{n}.log", allowed_failures))
        with Client(address, security=security(tls_dir), timeout=CONNECT_S, set_as_default=False) as client:
            try:
                client.wait_for_workers(workers, timeout=max(1.0, deadline - time.monotonic()))
            except TimeoutError as exc:
                logs = "\n".join(_tail(folder / f"worker-{n}.log") for n in range(workers))
                raise RuntimeError(f"the Dask workers did not connect:\n{logs}") from exc
        yield address
    finally:
        _stop(processes[1:])
        _stop(processes[:1])
        if os.geteuid() == 0:
            leftovers.sweep()  # the sandboxes of a worker that was killed
        shutil.rmtree(folder, ignore_errors=True)
