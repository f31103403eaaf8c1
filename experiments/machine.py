"""What a result file records about the machine that produced it: the processor, the instruction set PyTorch's
CPU kernels used, the cores, the threads and the load.

Two runs of the same program with the same seed give bit-identical results on one machine, but a processor
whose kernels take another instruction set (``torch.backends.cpu.get_cpu_capability()``: AVX2, AVX512, ...)
rounds some sums differently, and after a few hundred updates the trained models differ by a few points. So
every results file says where it was made: :func:`describe_machine`.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch


def cpu_model() -> str:
    """The processor's model name (Linux's /proc/cpuinfo; platform's answer elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_capability() -> str:
    """The instruction set of PyTorch's CPU kernels here ("AVX512", "AVX2", "DEFAULT", ...)."""
    try:
        return torch.backends.cpu.get_cpu_capability()
    except AttributeError:  # a PyTorch older than 2.1
        return "unknown"


def describe_machine(device: torch.device | None = None) -> dict:
    """``cpu_model``, ``cpu_capability``, ``cpu_count`` (the machine's cores, shared with whatever else ran),
    ``cpu_threads`` (PyTorch's), the device's name when it is a GPU, and ``load_average_at_start``
    (1, 5 and 15 minutes; other work on the machine slows every timing, never the trained numbers)."""
    machine = {
        "cpu_model": cpu_model(),
        "cpu_capability": cpu_capability(),
        "cpu_count": os.cpu_count(),
        "cpu_threads": torch.get_num_threads(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    if device is not None and device.type == "cuda":
        machine["gpu"] = torch.cuda.get_device_name(device)
    return machine
