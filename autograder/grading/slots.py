"""Sandbox slots: which sandbox user (uid ``UID_BASE`` + slot) a grading worker process runs its kernels as.

Two workers must never share a slot: a slot's uid carries the process limit of one sandbox and its
spares, and a worker kills what its sandboxes leave under that uid. A worker claims the lowest free
slot of the machine for its whole life with an exclusive ``flock`` on ``<slot>.lock`` in a folder of
root's (``/run/autograder-slots``; ``$AUTOGRADER_SLOTS`` to move it). The kernel releases the lock
when the worker ends, however it ends (SIGKILL included), so a slot is never lost. Every grading
worker takes its slot here: the ``--jobs`` workers of batch.py and the Dask workers of engine.py, so
that a local run and a Dask worker on one machine never collide.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from pathlib import Path

SLOTS = 64  # leftovers.USERS: uids UID_BASE .. UID_BASE + 63
_HELD: dict[int, int] = {}  # slot -> the open file descriptor holding its lock, for the life of this process


def folder() -> Path:
    """The lock folder: root's ``/run/autograder-slots``, or a private one in the temporary folder when this
    process cannot write /run (the unsandboxed mode, where no sandbox user exists). Refused when another
    user owns it or may write it (a student who made it first could hold every slot)."""
    chosen = os.environ.get("AUTOGRADER_SLOTS")
    private = Path(tempfile.gettempdir()) / f"autograder-slots-{os.geteuid()}"
    candidates = [Path(chosen)] if chosen else [Path("/run/autograder-slots"), private]
    for path in candidates:
        with contextlib.suppress(OSError):
            path.mkdir(mode=0o700, exist_ok=True)
        try:
            info = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise RuntimeError(f"{path} is not a folder of this user's that only it can write: remove it")
        return path
    raise RuntimeError(f"no folder for the sandbox slots' locks ({', '.join(map(str, candidates))})")


def claim() -> int:
    """The lowest slot no other process of this machine holds, now held by this process until it ends."""
    base = folder()
    for slot in range(SLOTS):
        if slot in _HELD:
            continue
        handle = os.open(base / f"{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            continue
        _HELD[slot] = handle
        return slot
    raise RuntimeError(f"all {SLOTS} sandbox slots of this machine are held by grading workers")


def held(slot: int) -> bool:
    """Whether a live process of this machine holds ``slot`` (its lock cannot be taken now)."""
    if slot in _HELD:
        return True
    try:
        handle = os.open(folder() / f"{slot}.lock", os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released at once, by the close below
    except BlockingIOError:
        return True
    finally:
        os.close(handle)
    return False


def release(slot: int) -> None:
    """Give a slot back (the process ending does it too)."""
    handle = _HELD.pop(slot, None)
    if handle is not None:
        os.close(handle)
