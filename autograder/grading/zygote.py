"""Sandboxes forked from a zygote, so that no submission pays for importing torch (sandbox.py asks for them).

A sandbox's start used to cost more CPU than grading the notebook in it: a new Python, ipykernel,
``import torch, numpy, matplotlib.pyplot`` (about 1.3 CPU-s of the 2.2 a chapter-03 submission
cost). A :class:`Zygote` pays that once per grading worker: it is a process of its own (never the
grader's: nothing of the grader, its tests or the reference is in it), started as root in a mount
namespace whose root is a jail like the sandbox's (``jail.zygote_script``), with the kernel's
environment; it imports ipykernel and the notebook's modules, starts no thread, and then only
forks. Each sandbox is a fresh child of it that enters namespaces, cgroups, a uid, limits and a
scratch folder of its own before it runs anything else (``forkserver.py``), so a submission's
kernel is a process no other submission's code touched, and what one kernel does (its module
globals, patches to torch, files, threads, processes) cannot reach another's.

The grader's handle on a forked sandbox (:class:`Forked`) answers as ``subprocess.Popen`` does
(``poll``, ``kill``, ``wait``, ``returncode``): it holds a pidfd of the sandbox's first process
and the read end of a pipe on which that process reports how the sandbox ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from autograder.grading import leftovers
from autograder.grading.jail import KERNEL_ENV, Limits, read_only_binds, rlimits, zygote_script

START_S = 180.0  # the zygote's imports on a loaded machine
ANSWER_S = 60.0  # a fork request


class ZygoteFailed(RuntimeError):
    """The zygote could not start, or did not answer: the grader's problem (the sandbox is retried)."""


class Forked:
    """One sandbox forked by the zygote, as the grader sees it (the subset of ``Popen`` that sandbox.py uses)."""

    def __init__(self, pid: int, pidfd: int, status: int):
        self.pid, self._pidfd, self._status = pid, pidfd, status
        self.returncode: int | None = None
        self._read = b""
        lines = self._lines(ANSWER_S)
        if not lines or not lines[0].isdigit():
            self.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.wait(10)  # (closes its descriptors)
            raise ZygoteFailed("the sandbox did not start")
        self.init = int(lines[0])  # pid 1 of the sandbox's namespaces; its /tmp is /proc/<init>/root/tmp

    def _lines(self, timeout: float) -> list[str]:
        """What the sandbox's first process reported: pid 1's pid, then (at its end) how it ended."""
        while self._status is not None and select.select([self._status], [], [], timeout)[0]:
            data = os.read(self._status, 64)
            self._read += data
            if not data:  # it is gone
                for fd in (self._status, self._pidfd):
                    os.close(fd)
                self._status = self._pidfd = None
            timeout = 0
        return self._read.decode(errors="replace").split()

    def poll(self) -> int | None:
        if self.returncode is None:
            lines = self._lines(0)
            if self._status is None:
                self.returncode = int(lines[1]) if len(lines) > 1 and lines[1].lstrip("-").isdigit() else -9
        return self.returncode

    def kill(self) -> None:
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and self._status is not None:
            select.select([self._status], [], [], timeout)
        if self.poll() is None:
            raise subprocess.TimeoutExpired("sandbox", timeout)
        return self.returncode


class Zygote:
    """One zygote process with ``modules`` imported; :meth:`fork` makes a sandbox (thread-safe)."""

    def __init__(self, modules: tuple[str, ...]):
        self.modules = modules
        self._lock = threading.Lock()
        self.folder = Path(tempfile.mkdtemp(prefix=f"{leftovers.PREFIX}zygote-", dir=leftovers.SCRATCH_PARENT))
        leftovers.claim(self.folder)  # a run killed with it leaves this folder: the next run cleans up
        (self.folder / "root").mkdir()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        code = (Path(__file__).parent / "forkserver.py").read_text()
        command = [sys.executable, "-c", code, f"{self.folder}/", str(theirs.fileno()), json.dumps(list(modules))]
        script = zygote_script(self.folder / "root", font_cache(), command)
        with open(self.folder / "zygote.log", "wb") as log:
            unshare = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
            self.proc = subprocess.Popen(unshare, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         pass_fds=[theirs.fileno()], env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                                         start_new_session=True)  # fmt: skip
        theirs.close()
        self.sock = ours
        try:
            answer = self._receive(START_S)[0]
            if not answer.get("ready"):
                raise ZygoteFailed(f"the zygote did not start: {answer} {self.log_tail()}")
        except BaseException:
            self.close()
            raise

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return (self.folder / "zygote.log").read_bytes()[-2000:].decode(errors="replace")
        return ""

    def _receive(self, timeout: float) -> tuple[dict, list[int]]:
        if not select.select([self.sock], [], [], timeout)[0]:
            raise ZygoteFailed(f"the zygote did not answer within {timeout:.0f} s")
        message, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, 4)
        if not message:
            raise ZygoteFailed(f"the zygote is gone: {self.log_tail()}")
        return json.loads(message), fds

    def fork(
        self, uid: int, limits: Limits, argv: list[str], connection: str, log: Path, cgroups: list[Path]
    ) -> Forked:
        """A new sandbox: uid ``uid`` with ``limits``, a fresh scratch tmpfs as its /tmp (holding ``connection``,
        the kernel's connection file), running ipykernel with ``argv``, its output in ``log``, in the ``cgroups``
        (directories)."""
        fds, status = [], None
        try:
            fds.append(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
            status, write = os.pipe()
            fds.append(write)
            fds += [os.open(path / "cgroup.procs", os.O_WRONLY) for path in cgroups]
            pids_cgroup = any((path / "pids.max").is_file() for path in cgroups)
            tmp_binds = [path for path in read_only_binds() if path.startswith("/tmp/")]  # hidden by the scratch tmpfs
            request = {"uid": uid, "limits": rlimits(limits, pids_cgroup), "env": KERNEL_ENV, "argv": argv,
                       "tmp_binds": tmp_binds,
                       "scratch_mb": limits.scratch_mb, "connection": connection}  # fmt: skip
            with self._lock:
                socket.send_fds(self.sock, [json.dumps(request).encode()], fds)
                answer, got = self._receive(ANSWER_S)
            if "pid" not in answer or len(got) != 1:
                raise ZygoteFailed(f"the zygote could not fork a sandbox: {answer}")
            forked, status = Forked(answer["pid"], got[0], status), None
            return forked
        except (OSError, ValueError) as exc:
            raise ZygoteFailed(f"the zygote could not fork a sandbox: {exc}") from None
        finally:
            for fd in fds + ([status] if status is not None else []):
                os.close(fd)

    def close(self) -> None:
        """End the zygote (the sandboxes it forked die with it) and remove its folder."""
        self.sock.close()
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        for path in (self.folder / "root", self.folder / "zygote.log", self.folder / leftovers.OWNER, self.folder):
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() else path.unlink()


_ZYGOTES: dict[tuple, Zygote] = {}
_LOCK = threading.Lock()


def zygote(modules: tuple[str, ...]) -> Zygote:
    """This process's zygote for ``modules``, started on first use (again if it died)."""
    with _LOCK:
        found = _ZYGOTES.get(modules)
        if found is not None and not found.alive:
            found.close()
            found = None
        if found is None:
            if not _ZYGOTES:
                from multiprocessing.util import Finalize

                Finalize(None, close_all, exitpriority=5)  # at the end of a worker, or of this process
            found = _ZYGOTES[modules] = Zygote(modules)
        return found


def close_all() -> None:
    with _LOCK:
        zygotes = list(_ZYGOTES.values())
        _ZYGOTES.clear()
    for each in zygotes:
        each.close()


def running_pids() -> list[int]:
    """The pids of this process's zygotes (scripts/grader_cpu.py counts their CPU)."""
    return [each.proc.pid for each in _ZYGOTES.values() if each.alive]


def font_cache() -> Path | None:
    """A matplotlib font list to seed the kernels with (building one costs seconds per kernel)."""
    for folder in (os.environ.get("MPLCONFIGDIR"), Path.home() / ".cache" / "matplotlib"):
        if folder and Path(folder).is_dir():
            found = sorted(Path(folder).glob("fontlist-*.json"))
            if found:
                return found[-1]
    return None
