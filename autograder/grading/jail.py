"""The jail a sandboxed kernel runs in: namespaces, a user of its own, limits (sandbox.py starts it).

Each grading worker's zygote (zygote.py) runs, as root, in a mount namespace of its own built by
:func:`zygote_script`: a jail on a fresh tmpfs that exists only in that namespace, into which exactly
what the kernel needs is bind-mounted read-only (:func:`read_only_binds`): ``/usr``, ``/etc``, the
Python installation, the virtual environment and the student package ``attention_course``; then it
``pivot_root``s into it, detaches the old root and runs chrooted in the jail. The repository
(``solutions/``, ``autograder/``, other students' files, the gradebook) is not in the namespace at
all. Each sandbox it forks (forkserver.py) unshares net, pid, mount, ipc and uts namespaces of its
own, mounts a fresh scratch tmpfs on ``/tmp`` (the kernel's working directory and ``HOME``) and a
``/proc`` of its own, and the kernel drops to an unprivileged user of its own (one uid per parallel
job, ``UID_BASE`` + job, so that one job's processes count neither against another's limits nor can
signal them), with no capabilities, ``no_new_privs``, and rlimits on address space, processes, file
size and CPU time (:class:`Limits`, :func:`rlimits`), in the environment :data:`KERNEL_ENV`. Where
the cgroup hierarchy is writable, a memory, pids and cpu cgroup per sandbox adds hard limits on the
whole process tree (:class:`CGroups`). :func:`sandbox_problem` says why no such jail can be built on
this machine.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

UID_BASE = 62000  # the sandbox of parallel job N runs as uid/gid UID_BASE + N


def sandbox_problem() -> str | None:
    """Why a real sandbox cannot be built on this machine, or None when it can."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "the sandbox needs root (unshare, mount, setpriv); run as root or pass --unsafe-no-sandbox"
    for tool in ("unshare", "chroot", "mount", "pivot_root"):
        if shutil.which(tool) is None:
            return f"the sandbox needs `{tool}` (util-linux/coreutils); install it or pass --unsafe-no-sandbox"
    probe = subprocess.run(["unshare", "--net", "--pid", "--mount", "--ipc", "--fork", "true"], capture_output=True)
    if probe.returncode != 0:
        return f"unshare cannot create namespaces here ({probe.stderr.decode(errors='replace').strip()[:200]})"
    return None


@dataclass
class Limits:
    """Resource limits of one sandbox."""

    memory_mb: int = 4096  # address space of each process (RLIMIT_AS); the cgroup's memory limit
    processes: int = 64  # the cgroup's pids.max (threads count too); RLIMIT_NPROC: see rlimits()
    file_mb: int = 64  # largest file a process may write (RLIMIT_FSIZE)
    scratch_mb: int = 256  # size of the scratch tmpfs
    cpu_s: int = 900  # CPU seconds per process (RLIMIT_CPU), a backstop to the wall-clock limit
    output_bytes: int = 2 << 20  # output kept per notebook (text and images); the rest is dropped


class CGroups:
    """Memory, pids and cpu cgroups for one job, when the hierarchy is writable (v1 or v2).

    The cpu group gives every sandbox the same share of the processors however many
    processes it runs: a fork bomb slows down only itself.
    """

    def __init__(self, name: str, limits: Limits):
        self.dirs: list[Path] = []
        self.oom_file: Path | None = None
        base = Path("/sys/fs/cgroup")
        wanted = {
            "memory": ("memory.limit_in_bytes", str(limits.memory_mb << 20)),
            "pids": ("pids.max", str(limits.processes)),
            "cpu": ("cpu.shares", "1024"),
        }
        if (base / "cgroup.controllers").exists():  # v2
            try:
                path = base / name
                path.mkdir(exist_ok=True)
                (path / "memory.max").write_text(str(limits.memory_mb << 20))
                (path / "pids.max").write_text(str(limits.processes))
                self.dirs.append(path)
                self.oom_file = path / "memory.events"
            except OSError:
                pass
            return
        for controller, (knob, value) in wanted.items():  # v1
            try:
                path = base / controller / name
                path.mkdir(parents=True, exist_ok=True)
                (path / knob).write_text(value)
                self.dirs.append(path)
                if controller == "memory":
                    self.oom_file = path / "memory.oom_control"
            except OSError:
                continue

    def oom_killed(self) -> bool:
        try:
            for line in self.oom_file.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, AttributeError, ValueError):
            pass
        return False

    def kill_and_remove(self) -> None:
        for path in self.dirs:
            for _ in range(50):
                try:
                    pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
                except OSError:
                    break
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                time.sleep(0.02)
            try:
                path.rmdir()
            except OSError:
                pass


def read_only_binds() -> list[str]:
    """Host paths the kernel needs, read-only: the system, Python, the venv, the course package."""
    import importlib.util

    paths = ["/usr", "/etc", sys.base_prefix, sys.prefix]
    spec = importlib.util.find_spec("attention_course")
    if spec and spec.submodule_search_locations:
        paths.extend(spec.submodule_search_locations)
    unique = []
    for path in paths:
        path = os.path.realpath(path)
        if os.path.isdir(path) and path not in unique and not any(path.startswith(p + "/") for p in unique):
            unique.append(path)
    return unique


KERNEL_ENV = {
    "HOME": "/tmp",
    "PATH": f"{sys.prefix}/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "MPLCONFIGDIR": "/tmp/.mpl",
    "IPYTHONDIR": "/tmp/.ipython",
    "JUPYTER_RUNTIME_DIR": "/tmp/.jupyter",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MALLOC_ARENA_MAX": "2",
}  # the kernel's whole environment (and the zygote's, which imports its modules)


def _jail_lines(root: Path, tmp: list[str]) -> list[str]:
    """Shell lines that build the jail ``ROOT/jail`` on a fresh tmpfs, ``tmp`` making its /tmp, and
    pivot_root into ROOT, detaching the old root: the host's file system is then not in the namespace.
    The process then runs chrooted in the jail (a chrooted process may not create user namespaces,
    which keeps the kernel without any capability)."""
    q = shlex.quote
    lines = [f"R={q(str(root))}", 'J="$R/jail"', 'mount -t tmpfs -o mode=755,size=4m tmpfs "$R"']
    lines.append('mkdir -p "$J/proc" "$J/dev/shm" "$J/tmp"')
    # /tmp first: a venv or checkout that lives under the host's /tmp is then mounted inside it below,
    # instead of being hidden by it.
    lines += tmp
    for link, target in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64"), ("sbin", "usr/sbin")):
        if os.path.islink(f"/{link}"):
            lines.append(f'ln -s {target} "$J/{link}"')
    for path in read_only_binds():
        lines.append(f'mkdir -p "$J"{q(path)} && mount --bind {q(path)} "$J"{q(path)}')
        lines.append(f'mount -o remount,bind,ro,nosuid,nodev "$J"{q(path)}')
    for node in ("null", "zero", "random", "urandom"):
        lines.append(f'touch "$J/dev/{node}" && mount --bind /dev/{node} "$J/dev/{node}"')
    lines.append('mount -t proc -o nosuid,nodev,noexec proc "$J/proc"')
    # enough outside the jail to run the last commands, then swap the roots and drop the old one
    lines += [f'ln -s jail/{d} "$R/{d}"' for d in ("usr", "bin", "lib", "lib64", "sbin", "proc")]
    lines += ['cd "$R"', "mkdir .old", "pivot_root . .old", "cd /", "umount -l /.old", "rmdir /.old"]
    return lines


def zygote_script(root: Path, font_cache: Path | None, command: list[str]) -> str:
    """The shell script that builds the zygote's jail (the sandbox's, with a small tmpfs of its own on /tmp,
    seeded with matplotlib's font list) in a mount namespace of its own and execs ``command`` there, as root
    (forkserver.py: each sandbox it forks mounts its scratch folder on /tmp, then drops to its uid)."""
    q = shlex.quote
    tmp = ['mount -t tmpfs -o mode=755,size=16m tmpfs "$J/tmp"', 'mkdir "$J/tmp/.mpl"']
    if font_cache is not None:
        tmp.append(f'cp {q(str(font_cache))} "$J/tmp/.mpl/"')
    env = ["/usr/bin/env", "-i", "-C", "/tmp", *(f"{k}={v}" for k, v in KERNEL_ENV.items())]
    lines = [
        "set -e",
        *_jail_lines(root, tmp),
        "exec " + " ".join(q(part) for part in ["chroot", "/jail", *env, *command]),
    ]
    return "\n".join(lines)


# A worker's sandboxes alive at once under its slot's uid: the one grading, its spares (spares.SparePool.DEPTH)
# and one still being killed. RLIMIT_NPROC counts every process and thread of a uid, theirs together.
SANDBOXES_PER_UID = 4


def rlimits(limits: Limits, pids_cgroup: bool = False) -> dict[str, int]:
    """The kernel's rlimits (soft and hard), by prlimit's names.

    ``limits.processes`` bounds one sandbox. Where the sandbox has a pids cgroup of its own (``pids_cgroup``),
    that cgroup holds it to ``processes`` and the uid's RLIMIT_NPROC is the slot's total, so that a fork bomb
    in the sandbox being graded cannot take the processes of the spare starting beside it under the same uid
    (which then could not start its threads). Without one, RLIMIT_NPROC is the only bound: ``processes``."""
    nproc = limits.processes * (SANDBOXES_PER_UID if pids_cgroup else 1)
    return {"as": limits.memory_mb << 20, "nproc": nproc, "fsize": limits.file_mb << 20,
            "cpu": limits.cpu_s, "core": 0}  # fmt: skip
