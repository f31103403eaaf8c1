"""CPU counted for the grader's benchmarks (scripts/benchmark_grader.py, benchmark_class.py, grader_cpu.py).

- :func:`busy_seconds`: the CPU seconds the whole machine has spent busy since boot (``/proc/stat``,
  other work included), read before and after a command; :func:`process_cpu`: one process's;
- :class:`CpuGroup`: a cpuacct cgroup (v1) that counts the CPU of the processes put in it and of all
  their descendants, however they end. The sandbox's own cgroups (memory, pids, cpu) leave cpuacct
  alone, so a command's kernels stay counted in the command's group. Needs root.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (/proc/stat; other work included)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command's name (state, ppid, ...), None once the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def process_cpu(fields: list[str]) -> float:
    """CPU seconds of a process (from :func:`stat_fields`) and of the children it reaped: utime, stime, cutime,
    cstime."""
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def group_seconds(path: Path) -> float:
    """CPU seconds counted so far by the cpuacct cgroup at ``path`` (0 where it cannot be read)."""
    try:
        return int((path / "cpuacct.usage").read_text()) / 1e9
    except (OSError, ValueError):
        return 0.0


class CpuGroup:
    """A fresh cpuacct cgroup named ``name`` (``path`` is None where there is no writable cpuacct hierarchy)."""

    def __init__(self, name: str):
        self.path: Path | None = None
        if os.geteuid() == 0 and (CPUACCT / "cpuacct.usage").exists():
            try:
                (CPUACCT / name).mkdir()
                self.path = CPUACCT / name
            except OSError:
                pass

    @property
    def procs(self) -> str:
        """The file a process writes its pid to in order to join ("-" where there is no group)."""
        return str(self.path / "cgroup.procs") if self.path else "-"

    def add(self, pid: int) -> None:
        """Move process ``pid`` (0: the caller) into the group; its later children follow it."""
        if self.path:
            (self.path / "cgroup.procs").write_text(str(pid))

    def empty(self) -> bool:
        return not self.path or not (self.path / "cgroup.procs").read_text().strip()

    def seconds(self) -> float | None:
        return group_seconds(self.path) if self.path else None

    def remove(self) -> None:
        for _ in range(100):  # the last processes of the run may still be ending
            try:
                self.path and self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
