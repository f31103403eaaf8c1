"""Spare sandboxes: the next submissions' kernels, started while the current one is graded.

A batch worker (batch.py) makes one :class:`SparePool` and passes it to the grading of each of its
submissions (:func:`runner.grade`). Up to ``depth`` spares are started ahead, oldest first. Each is
used once, by a later submission of the same assignment and options (the same ``key``), or closed.
The batch asks for spares only while more submissions are queued than there are workers; spares
nobody takes within ``idle_s`` of the last submission are closed (a watcher thread), and the worker
closes the rest when it ends, so nothing stays running.

Why two: a sandbox's start (the kernel, ``import torch``, numpy, matplotlib: about 2.5 s of CPU)
took longer than grading a notebook of chapter 03 (about 2 s). With one spare, the worker then
waited for it with one core idle; with two, the next one was already starting meanwhile. Since the
kernels are forked from a zygote that imported those modules once (zygote.py), a start costs about
0.13 CPU-s, and a spare mostly saves the kernel's own start-up time (ipykernel, the agent).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future


class SparePool:
    """One worker's spare sandboxes. ``start(number)`` makes a ready sandbox (in a thread of its own)."""

    IDLE_S = 3.0
    DEPTH = 2

    def __init__(self, idle_s: float = IDLE_S, depth: int = DEPTH):
        self.idle_s = idle_s
        self.depth = depth
        self._lock = threading.Lock()
        self._queue: list = []  # [(key, Future of a Sandbox)], oldest first
        self._count = 0
        self._last_used = 0.0
        self._busy = False  # a submission is being graded
        self._watching = False  # a thread closes idle spares

    @contextlib.contextmanager
    def grading(self):
        """While a submission is graded, its worker is not idle: no spare is closed for idleness."""
        self._busy = True
        try:
            yield self
        finally:
            with self._lock:
                self._busy, self._last_used = False, time.monotonic()

    def take(self, key: tuple):
        """The oldest spare, if it was started for ``key`` and is alive; spares for another key are closed."""
        with self._lock:
            queue, self._queue = self._queue, []
            taken = queue.pop(0)[1] if queue and queue[0][0] == key else None
            self._queue = [(k, future) for k, future in queue if k == key]
            stale = [future for k, future in queue if k != key]
            self._last_used = time.monotonic()
        for future in stale:
            _close(future)
        if taken is None:
            return None
        try:
            sandbox = taken.result()
        except BaseException:  # noqa: B036 - it did not start: a fresh one will
            return None
        if sandbox.alive:
            return sandbox
        sandbox.close()
        return None

    def prestart(self, key: tuple, start: Callable, depth: int = 1) -> None:
        """Start spares for ``key`` until ``depth`` (at most ``self.depth``) are queued; ``start(number)``
        makes one (``number`` counts this pool's spares, to name each one's folders)."""
        started = []
        with self._lock:
            while len(self._queue) < min(depth, self.depth):
                self._count += 1
                future: Future = Future()
                self._queue.append((key, future))
                started.append((self._count, future))
            watch, self._watching = not self._watching, True

        def run(number, future):
            try:
                future.set_result(start(number))
            except BaseException as exc:  # noqa: B036
                future.set_exception(exc)

        for number, future in started:
            threading.Thread(target=run, args=(number, future), name="spare-sandbox", daemon=True).start()
        if watch:
            threading.Thread(target=self._watch_idle, name="spare-watch", daemon=True).start()

    def _watch_idle(self) -> None:
        """Close the spares if no submission takes them (the batch ran out of work for this worker)."""
        while True:
            time.sleep(self.idle_s / 3)
            with self._lock:
                if self._queue and (self._busy or time.monotonic() - self._last_used < self.idle_s):
                    continue
                queue, self._queue = self._queue, []
                self._watching = False
            for _, future in queue:
                _close(future)
            return

    def close(self) -> None:
        """Close the spare sandboxes (at the end of a worker)."""
        with self._lock:
            queue, self._queue = self._queue, []
        for _, future in queue:
            _close(future)


def _close(future) -> None:
    """Close a spare once it has started (or failed to)."""
    try:
        future.result().close()
    except BaseException:  # noqa: B036 - it never started
        pass
