"""A time limit on code running in this process's main thread (SIGALRM), for the grader's runner and
the tests' wrong-answer harness alike."""

from __future__ import annotations

import contextlib
import signal
import threading


@contextlib.contextmanager
def alarm(seconds: float, error: type[BaseException], message: str):
    """Raise ``error(message)`` in the main thread once ``seconds`` have passed, even inside loops
    that never return to the caller; in any other thread (where signals cannot be set) no limit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise error(message)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(0.01, seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
