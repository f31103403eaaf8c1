"""What one grading run costs, measured from outside it (scripts/benchmark_class.py's instruments).

- **Machine-wide busy CPU** (``/proc/stat``, other work included), as ``scripts/benchmark_grader.py``
  measures it.
- **The grader's own CPU**: the coordinator (``python -m autograder grade``) runs under a small wrapper
  that joins a cpuacct cgroup of its own first (:class:`CpuGroup`; cgroup v1, where the sandbox's own
  cgroups, memory, pids and cpu, leave cpuacct alone), and writes, as it ends, its own
  ``getrusage(RUSAGE_SELF)`` (the coordinator's CPU and peak RSS) and ``RUSAGE_CHILDREN``. The cgroup
  counts every process the run starts, the sandboxes' kernels included, however they end; rusage
  misses a kernel killed with its sandbox before its parent could reap it, so it is the fallback only
  (where cpuacct is missing) and a cross-check. Processes started before the run (a Dask cluster's
  scheduler and workers) are moved into the cgroup by the caller (:meth:`CpuGroup.add`).
- **Peak memory**: a thread polls, once a second, every descendant of this process: the peak RSS
  (``VmHWM``) of each grading worker (a ``--jobs`` worker, a Dask worker), of each sandboxed kernel, of
  the Dask scheduler; and the sandboxes' memory cgroups' own high-water mark
  (``memory.max_usage_in_bytes`` in cgroup v1, ``memory.peak`` in v2), where the grader made one. A
  process that lives less than a second may be missed; the coordinator's peak is exact (its rusage).
"""

from __future__ import annotations

import glob
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_usage import CpuGroup, busy_seconds, process_cpu, stat_fields  # noqa: E402

WRAPPER = """
import json, os, resource, runpy, sys
usage_file, cgroup_procs = sys.argv.pop(1), sys.argv.pop(1)
if cgroup_procs != "-":
    with open(cgroup_procs, "w") as handle:
        handle.write(str(os.getpid()))
def usage(who):
    u = resource.getrusage(who)
    return {"cpu_s": u.ru_utime + u.ru_stime, "maxrss_kb": u.ru_maxrss}
try:
    sys.argv[0] = "autograder"
    runpy.run_module("autograder", run_name="__main__", alter_sys=True)
finally:
    with open(usage_file, "w") as handle:
        json.dump({"self": usage(resource.RUSAGE_SELF), "children": usage(resource.RUSAGE_CHILDREN)}, handle)
"""
CGROUPS = ("/sys/fs/cgroup/memory/autograder-*/memory.max_usage_in_bytes", "/sys/fs/cgroup/autograder-*/memory.peak")


def children_cpu() -> float:
    """CPU seconds of this process's children that ended and were waited for (and theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def classify(command: str) -> str:
    """Which part of the grader a process is, from its command line."""
    if "ipykernel_launcher" in command:
        return "kernel"
    if "scheduler" in command and "dask" in command:
        return "scheduler"
    if "spawn_main" in command or "forkserver" in command or ("dask" in command and "worker" in command):
        return "worker"
    return "other"


class PeakMemory:
    """A thread that keeps, per part of the grader, the largest peak RSS seen, and the sandboxes' cgroup peak."""

    def __init__(self, interval: float = 1.0):
        self.interval = interval
        self.rss_kb: dict[str, int] = {}
        self.cgroup_bytes = 0
        self.cgroup_seen = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True, name="peak-memory")

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        for pid in descendants(os.getpid()):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            hwm = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)
            part = classify(command)
            self.rss_kb[part] = max(self.rss_kb.get(part, 0), hwm)
        for pattern in CGROUPS:
            for path in glob.glob(pattern):
                try:
                    self.cgroup_bytes = max(self.cgroup_bytes, int(Path(path).read_text()))
                    self.cgroup_seen = True
                except (OSError, ValueError):
                    continue


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        if fields := stat_fields(int(entry)):
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def live_tree_cpu(root: int) -> float:
    """CPU seconds of the live descendants of ``root``, with those of their children that ended and were waited
    for (each process counted once: by itself while alive, in its parent's ``cutime`` once reaped)."""
    return sum(process_cpu(fields) for pid in descendants(root) if (fields := stat_fields(pid)))


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_coordinator(arguments: list[str], cwd: Path, usage_file: Path, log: Path, group: CpuGroup) -> dict:
    """``python -m autograder ARGUMENTS`` under the wrapper, in ``group``: its wall time, the machine's busy CPU
    meanwhile, and the coordinator's own CPU and peak RSS and its descendants' CPU. Exits when the command fails."""
    command = [sys.executable, "-c", WRAPPER, str(usage_file), group.procs, *arguments]
    busy, started, load_before = busy_seconds(), time.monotonic(), load()
    with open(log, "wb") as output:
        completed = subprocess.run(command, cwd=cwd, stdout=output, stderr=subprocess.STDOUT)
    wall = time.monotonic() - started
    figures = {"wall_s": round(wall, 2), "busy_cpu_s": round(busy_seconds() - busy, 2), "load_before": load_before,
               "load_after": load()}  # fmt: skip
    if completed.returncode not in (0, 1):  # 1: some grader_error rows, which the comparison reports
        sys.exit(f"{' '.join(arguments[:3])} failed ({completed.returncode}):\n{log.read_text()[-3000:]}")
    usage = json.loads(usage_file.read_text())
    figures.update(
        exit_status=completed.returncode,
        coordinator_cpu_s=round(usage["self"]["cpu_s"], 2),
        coordinator_peak_rss_mb=round(usage["self"]["maxrss_kb"] / 1024, 1),
        descendants_cpu_s=round(usage["children"]["cpu_s"], 2),
    )
    return figures


def peaks(monitor: PeakMemory) -> dict:
    """The monitor's figures in MB (None for a part never seen)."""
    mb = {part: round(kb / 1024, 1) for part, kb in monitor.rss_kb.items()}
    return {
        "worker_peak_rss_mb": mb.get("worker"),
        "kernel_peak_rss_mb": mb.get("kernel"),
        "scheduler_peak_rss_mb": mb.get("scheduler"),
        "sandbox_cgroup_peak_mb": round(monitor.cgroup_bytes / 2**20, 1) if monitor.cgroup_seen else None,
    }
