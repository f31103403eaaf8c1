"""Chapter 08's benchmark, part 1: one head of attention at length, its memory and its time.

:func:`measure_attention` runs three ways of computing ``softmax(Q K^T / sqrt(d_k)) V`` (:data:`METHODS`:
the formula as written, the reference ``tiled_attention``, PyTorch's ``scaled_dot_product_attention``) at
each length and records, for each, the peak tensor memory (:class:`TensorMemory`: every new storage an
operator creates, until it is freed), the peak RSS in a fresh process (:func:`peak_rss`), the largest
tensor, the multiply-adds and the time. :mod:`experiments.benchmark_attention_at_scale` is the program.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
import weakref
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from attention_course.profiling import matmul_flops, matmuls, record_ops
from autograder.reference.ch08_attention_at_scale import tiled_attention
from experiments.cli import ROOT

METHODS = {
    "naive": "naive (the formula)",
    "tiled": "tiled_attention",
    "sdpa": "scaled_dot_product_attention",
}


def naive_attention(Q, K, V):
    """softmax(Q K^T / sqrt(d_k)) V as written: the whole (T_q, T_k) score matrix, then its softmax."""
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1) @ V


def attention_call(method: str, block_size: int):
    """The function of one method, called as fn(Q, K, V) with Q, K, V (T, d)."""
    if method == "naive":
        return naive_attention
    if method == "tiled":
        return lambda Q, K, V: tiled_attention(Q, K, V, block_size)[0]
    if method == "sdpa":
        # (B, n_heads, T, d) inputs: on the CPU PyTorch then runs its flash kernel (3-D inputs take the math path)
        return lambda Q, K, V: F.scaled_dot_product_attention(Q[None, None], K[None, None], V[None, None])[0, 0]
    raise ValueError(method)


class TensorMemory(TorchDispatchMode):
    """The bytes held by tensors that operators create while the mode is active, and their peak.

    Every output of an operator whose storage is new is counted once, with a finaliser that removes
    it when the storage is freed (PyTorch keeps one Python object per storage, so the finaliser runs
    when the memory is released). Storages that existed before (the inputs) are not counted, also when
    an operator returns a view of them (a transpose, a slice, an unsqueeze): pass them as ``existing``.
    """

    def __init__(self, existing=()):
        super().__init__()
        self.live = 0
        self.peak = 0
        self._seen: set[int] = set()
        self._existing = {t.untyped_storage().data_ptr() for t in existing if isinstance(t, torch.Tensor)}

    def _release(self, key: int, nbytes: int) -> None:
        self._seen.discard(key)
        self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outputs, _ = tree_flatten(out)
        for tensor in outputs:
            if not isinstance(tensor, torch.Tensor):
                continue
            storage = tensor.untyped_storage()
            key = storage.data_ptr()
            if key in self._seen or key in self._existing or storage.nbytes() == 0:
                continue
            self._seen.add(key)
            self.live += storage.nbytes()
            weakref.finalize(storage, self._release, key, storage.nbytes())
        self.peak = max(self.peak, self.live)
        return out


def tensor_memory(fn, *args, existing=()) -> int:
    """Peak bytes of the tensors created during fn(*args), the returned ones included while alive (views of
    the arguments, and of the tensors in ``existing`` such as a module's weights, are not new memory and do
    not count)."""
    mode = TensorMemory(existing=[*tree_flatten(args)[0], *existing])
    with mode:
        result = fn(*args)
    del result
    return mode.peak


def _rss_child(method: str, length: int, d: int, block_size: int, threads: int) -> None:
    """In a fresh process: the peak resident memory of one call above the resident memory just before it."""
    torch.set_num_threads(threads)
    generator = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(length, d, generator=generator) for _ in range(3))
    fn = attention_call(method, block_size)
    fn(Q[:64], K[:64], V[:64])  # load the kernels on a small input first

    def status(field):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(field)

    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark VmHWM to the current RSS
    before = status("VmRSS")
    out = fn(Q, K, V)
    peak = status("VmHWM")
    del out
    print(json.dumps({"rss_before": before, "rss_peak": peak}))


def peak_rss(method: str, length: int, d: int, block_size: int, threads: int) -> int | None:
    """Peak RSS increase of one call, measured in a fresh Python process (None where /proc cannot tell)."""
    if not Path("/proc/self/clear_refs").exists():
        return None
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); from experiments.attention_memory import _rss_child; "
        f"_rss_child({method!r}, {length}, {d}, {block_size}, {threads})"
    )
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(f"RSS measurement of {method} at {length} failed:\n{result.stderr[-2000:]}")
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    return figures["rss_peak"] - figures["rss_before"]


def measure_attention(lengths, d, block_size, repeats, threads, rss) -> dict:
    methods = {
        name: {
            "label": label,
            "tensor_bytes": [],
            "rss_bytes": [],
            "largest_tensor_elements": [],
            "multiply_adds": [],
            "seconds": [],
            "all_seconds": [],
        }
        for name, label in METHODS.items()
    }
    print(f"\n1. attention, one head, d_k = d_v = {d}, float32, {threads} thread(s); blocks of {block_size} keys")
    print(f"{'T':>6} {'method':<28} {'tensor memory':>14} {'peak RSS':>11} {'largest tensor':>15} {'seconds':>9}")
    for length in lengths:
        generator = torch.Generator().manual_seed(length)
        Q, K, V = (torch.randn(length, d, generator=generator) for _ in range(3))
        reference = None
        for name, label in METHODS.items():
            fn = attention_call(name, block_size)
            row = methods[name]
            row["tensor_bytes"].append(tensor_memory(fn, Q, K, V))
            out, ops = record_ops(fn, Q, K, V)
            row["largest_tensor_elements"].append(
                max((math.prod(s) for op in ops if not op.is_view for s in op.outputs), default=0)
            )
            row["multiply_adds"].append(matmul_flops(ops) if matmuls(ops) else None)
            if reference is None:
                reference = out.double()
            else:
                error = (out.double() - reference).abs().max().item()
                assert error < 1e-4, f"{name} differs from the formula by {error} at T = {length}"
            del out
            if length <= 4096:
                fn(Q, K, V)  # warm-up
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                fn(Q, K, V)
                times.append(time.perf_counter() - start)
            row["all_seconds"].append(times)
            row["seconds"].append(statistics.median(times))
            row["rss_bytes"].append(peak_rss(name, length, d, block_size, threads) if rss else None)
            rss_text = "-" if row["rss_bytes"][-1] is None else f"{row['rss_bytes'][-1] / 2**20:.1f} MiB"
            print(
                f"{length:>6} {label:<28} {row['tensor_bytes'][-1] / 2**20:>10.1f} MiB {rss_text:>11} "
                f"{row['largest_tensor_elements'][-1]:>15,} {row['seconds'][-1]:>9.3f}",
                flush=True,
            )
        del reference
    return {"lengths": list(lengths), "d": d, "block_size": block_size, "repeats": repeats, "methods": methods}
