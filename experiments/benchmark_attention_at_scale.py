"""Benchmark for chapter 08: attention's memory and time at length, and decoding with a key-value cache.

What it measures, on the CPU, with the reference solutions of chapter 08
(``autograder.reference.ch08_attention_at_scale``), float32, ``--threads`` PyTorch threads (default 1):

1. **Attention at length** (one head, d_k = d_v = 64, no mask, lengths ``--lengths``, by default 256 to
   16,384): the formula as written (``softmax(Q K^T / sqrt(d_k)) V``, "naive"), the reference
   ``tiled_attention`` with blocks of ``--block-size`` keys, and ``F.scaled_dot_product_attention``.
   For each, three figures:

   - *tensor memory*: the peak, during the call, of the bytes held by the tensors that PyTorch's
     operators created in it (a ``TorchDispatchMode`` sees every operator's outputs and a finaliser on
     each new storage sees it freed). It depends only on the code and the shapes, not on the machine
     or its load; it does not see scratch buffers a kernel allocates inside itself;
   - *peak RSS*: what the operating system saw, in a fresh Python process per measurement: the peak
     resident set size during the call (``VmHWM``, reset just before it through
     ``/proc/self/clear_refs``) minus the resident size just before it. It includes the allocator's
     behaviour and every internal buffer (``--no-rss`` skips it; Linux only);
   - *time*: wall-clock seconds of one call, the median of ``--repeats`` calls after one warm-up
     (lengths above 4,096: no warm-up, the first call is one of the repeats).

2. **Per-layer costs** (Vaswani et al., 2017, Table 1) for n = 256 and 1,024 positions of width
   d = 64: a self-attention layer (the attention itself: scores and weighted sum), a recurrent layer
   (h_t = tanh(x_t W + h_(t-1) U)) and a convolutional layer (kernel width k = 3): multiply-adds counted
   from the shapes of the products and convolutions PyTorch ran (``attention_course.profiling``), the
   number of those that must run one after the other, and the maximum path length, measured with
   autograd: how many layers (or recurrent steps) lie between input position 0 and output position
   n - 1 (for convolutions: a stack of dilated layers, dilation k^l, grown until the output depends on
   the input).

3. **Decoding** with and without the key-value cache: a small decoder-only language model built from
   the reference ``KVCacheSelfAttention`` (``--decoder-config``: d_model 256, 4 heads, 2 layers,
   feed-forward 1,024, 1,000 words, random weights with a fixed seed) generates ``--generate`` tokens
   greedily (by default 64 to 512) after an 8-token prompt, once recomputing the whole prefix at every
   step (chapter 07's way) and once with the cache: the time (median of ``--repeats``), the
   multiply-adds of all matrix products (recorded), and whether the two runs wrote identical tokens.

It prints a table per part and the two performance targets, and whether they are met:

- at length 8,192 the reference ``tiled_attention`` peaks at no more than 1/10 of the naive
  computation's memory (both measures: tensor memory and peak RSS);
- generating 512 tokens with the cache is at least 5x faster than recomputing the whole prefix at every
  step, with identical tokens.

It writes everything, with the load average before and after, the thread count and the versions, to
``--out`` (default ``attention_course/assets/attention_at_scale_results.json``, which chapter 08 plots).
The memory figures and multiply-adds do not depend on the machine's load; the times do (on a shared
machine, note the load average, and prefer the ratios measured in one run).

How to run it, from the repository root (with the defaults, 4 minutes on the 2-core machine at load 2 to 5,
8 minutes at load 9 to 13)::

    .venv/bin/python scripts/benchmark_attention_at_scale.py
    .venv/bin/python scripts/benchmark_attention_at_scale.py --quick --out /tmp/quick.json   # seconds: plumbing only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import weakref
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402

from attention_course.profiling import matmul_flops, matmuls, record_ops  # noqa: E402
from autograder.reference.ch08_attention_at_scale import KVCacheSelfAttention, tiled_attention  # noqa: E402

DEFAULT_OUT = ROOT / "attention_course" / "assets" / "attention_at_scale_results.json"
METHODS = {
    "naive": "naive (the formula)",
    "tiled": "tiled_attention",
    "sdpa": "scaled_dot_product_attention",
}
TARGET_MEMORY_LENGTH, TARGET_MEMORY_RATIO = 8192, 0.1
TARGET_DECODE_TOKENS, TARGET_DECODE_SPEEDUP = 512, 5.0


# ---------------------------------------------------------------------------------------------
# 1. attention at length
# ---------------------------------------------------------------------------------------------


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


def tensor_memory(fn, *args) -> int:
    """Peak bytes of the tensors created during fn(*args), the returned ones included while alive (views of
    the arguments are not new memory and do not count)."""
    mode = TensorMemory(existing=tree_flatten(args)[0])
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
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.argv = ['x']; import runpy; "
        f"m = runpy.run_path({str(Path(__file__).resolve())!r}, run_name='benchmark'); "
        f"m['_rss_child']({method!r}, {length}, {d}, {block_size}, {threads})"
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


# ---------------------------------------------------------------------------------------------
# 2. per-layer costs (Vaswani et al., 2017, Table 1)
# ---------------------------------------------------------------------------------------------


def conv_multiply_adds(ops) -> int:
    """Multiply-adds of the convolutions among ops: output elements x input channels x kernel width."""
    total = 0
    for op in ops:
        if op.name.startswith("aten.convolution") and op.outputs:
            weight = op.inputs[1]  # (out_channels, in_channels, k)
            total += math.prod(op.outputs[0]) * weight[1] * weight[2]
    return total


PRODUCT_NODES = (
    "MmBackward",
    "AddmmBackward",
    "BmmBackward",
    "MvBackward",
    "DotBackward",
    "ConvolutionBackward",
    "MatmulBackward",
    "BaddbmmBackward",
)


def _graph(root):
    """The autograd graph below root: (nodes in an order where every node comes before its inputs, edges)."""
    order, edges, seen, stack = [], {}, set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node is None or node in seen:
            continue
        seen.add(node)
        edges[node] = [child for child, _ in node.next_functions if child is not None]
        stack.append((node, True))
        stack.extend((child, False) for child in edges[node])
    return order[::-1], edges


def _is_product(node) -> int:
    return int(type(node).__name__.startswith(PRODUCT_NODES))


def longest_chain(output) -> int:
    """Matrix products or convolutions in the longest chain of the autograd graph below output: the ones
    that must run one after the other, however many processors there are."""
    order, edges = _graph(output.grad_fn)
    depth = {}
    for node in reversed(order):  # inputs first
        depth[node] = _is_product(node) + max((depth[child] for child in edges[node]), default=0)
    return depth[output.grad_fn]


def depends(stack, depth: int, n: int, d: int) -> bool:
    """Whether output position n - 1 of stack(X, depth) depends on input position 0 (autograd)."""
    X = torch.randn(n, d, dtype=torch.float64, requires_grad=True)
    stack(X, depth)[n - 1].sum().backward()
    return bool(X.grad[0].abs().max() > 0)


def fewest_layers(stack, n: int, d: int) -> int:
    """The fewest layers of stack(X, depth) that connect input position 0 to output position n - 1: the
    layer's maximum path length, in layers (found by doubling, then bisection; dependence only grows
    with depth)."""
    high = 1
    while not depends(stack, high, n, d):
        high *= 2
        if high > 4 * n:
            return -1
    low = high // 2  # does not connect (or 0)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if depends(stack, middle, n, d) else (middle, high)
    return high


def recurrent_layer(X, W, U):
    """h_t = tanh(x_t W + h_(t-1) U) for t = 0 .. n-1; X (n, d) -> H (n, d)."""
    inputs = X @ W  # (n, d): every input projected at once
    h = torch.zeros(X.shape[1], dtype=X.dtype)
    states = []
    for t in range(X.shape[0]):
        h = torch.tanh(inputs[t] + h @ U)  # one product per step, each needing the previous h
        states.append(h)
    return torch.stack(states)


def measure_layer_costs(sizes=(256, 1024), d=64, k=3) -> dict:
    """Table 1 of Vaswani et al. (2017), measured for one layer of each kind: multiply-adds, the products in
    the longest chain of its autograd graph (they must run one after the other), and its maximum path
    length: the fewest layers that connect input position 0 to output position n - 1 (attention layers;
    sweeps of the recurrence, each one step further; causal dilated convolutions, dilation k^l)."""
    torch.manual_seed(0)
    W, U = torch.randn(d, d) / math.sqrt(d), torch.randn(d, d) / math.sqrt(d)
    conv = nn.Conv1d(d, d, k, bias=False)

    def convolution(X):  # one layer, "same" padding: (n, d) -> (n, d)
        return F.conv1d(X.T[None], conv.weight, padding=k // 2)[0].T

    def attention_stack(X, depth):  # depth self-attention layers
        for _ in range(depth):
            X = naive_attention(X, X, X)
        return X

    def recurrent_sweeps(X, depth):  # the recurrence as depth parallel sweeps: h_t <- tanh(x_t W + h_(t-1) U)
        inputs, h = X @ W.double(), torch.zeros_like(X)
        for _ in range(depth):  # after n sweeps h is the recurrent layer's output exactly
            h = torch.tanh(inputs + F.pad(h[:-1], (0, 0, 1, 0)) @ U.double())
        return h

    def dilated_stack(X, depth):  # causal dilated convolutions: output t reads t, t - D, ..., t - (k-1) D, D = k^l
        h = X.T[None]
        for layer in range(depth):
            h = F.conv1d(F.pad(h, ((k - 1) * k**layer, 0)), conv.weight.double(), dilation=k**layer)
        return h[0].T

    layers = {
        "self_attention": (
            "self-attention",
            "O(n^2 d)",
            "O(1)",
            "O(1)",
            lambda X: naive_attention(X, X, X),
            attention_stack,
        ),
        "recurrent": ("recurrent", "O(n d^2)", "O(n)", "O(n)", lambda X: recurrent_layer(X, W, U), recurrent_sweeps),
        "convolutional": (f"convolutional (k = {k})", "O(k n d^2)", "O(1)", "O(log_k(n))", convolution, dilated_stack),
    }
    rows = {}
    for name, (label, operations, sequential, path, layer, stack) in layers.items():
        row = rows[name] = {
            "label": label,
            "operations": operations,
            "sequential": sequential,
            "path": path,
            "multiply_adds": [],
            "sequential_operations": [],
            "path_length": [],
        }
        for n in sizes:
            X = torch.randn(n, d)
            _, ops = record_ops(layer, X)
            row["multiply_adds"].append(matmul_flops(ops) + conv_multiply_adds(ops))
            X.requires_grad_()
            row["sequential_operations"].append(longest_chain(layer(X)))
            row["path_length"].append(fewest_layers(stack, n, d))
    print(
        f"\n2. per-layer costs (Vaswani et al., 2017, Table 1), d = {d}, k = {k}, n = {' and '.join(map(str, sizes))}"
    )
    print(
        f"{'layer':<22} {'operations':>10} {'multiply-adds':>27} {'sequential':>10} {'measured':>11} "
        f"{'path':>12} {'measured':>9}"
    )
    for row in rows.values():
        adds = " / ".join(f"{a:,}" for a in row["multiply_adds"])
        sequential = " / ".join(map(str, row["sequential_operations"]))
        path = " / ".join(map(str, row["path_length"]))
        print(
            f"{row['label']:<22} {row['operations']:>10} {adds:>27} {row['sequential']:>10} {sequential:>11} "
            f"{row['path']:>12} {path:>9}"
        )
    return {"n": list(sizes), "d": d, "k": k, "rows": rows}


# ---------------------------------------------------------------------------------------------
# 3. decoding with and without the key-value cache
# ---------------------------------------------------------------------------------------------


class Decoder(nn.Module):
    """A decoder-only language model of pre-norm layers built from the reference KVCacheSelfAttention."""

    def __init__(self, n_vocab, d_model, num_heads, num_layers, ff_dim, max_len):
        super().__init__()
        self.embedding = nn.Embedding(n_vocab, d_model)
        self.positions = nn.Embedding(max_len, d_model)
        self.layers = nn.ModuleList(
            nn.ModuleDict(
                {
                    "norm1": nn.LayerNorm(d_model),
                    "attention": KVCacheSelfAttention(d_model, num_heads),
                    "norm2": nn.LayerNorm(d_model),
                    "ff": nn.Sequential(nn.Linear(d_model, ff_dim), nn.ReLU(), nn.Linear(ff_dim, d_model)),
                }
            )
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, n_vocab)

    def forward(self, tokens, caches=None):
        """tokens (B, T_new) -> (logits (B, T_new, n_vocab), one (K, V) cache per layer)."""
        T_past = 0 if caches is None else caches[0][0].shape[2]
        x = self.embedding(tokens) + self.positions(torch.arange(T_past, T_past + tokens.shape[1]))
        new_caches = []
        for i, layer in enumerate(self.layers):
            attended, cache = layer["attention"](layer["norm1"](x), None if caches is None else caches[i])
            x = x + attended
            x = x + layer["ff"](layer["norm2"](x))
            new_caches.append(cache)
        return self.out(self.norm(x)), new_caches


@torch.no_grad()
def generate(model, prompt, steps, use_cache):
    """Greedy generation of `steps` tokens after prompt (B, T_prompt): recomputing the prefix, or with the cache."""
    tokens, caches, new = prompt, None, prompt
    for _ in range(steps):
        if use_cache:
            logits, caches = model(new, caches)
        else:
            logits, _ = model(tokens)
        new = logits[:, -1].argmax(-1, keepdim=True)
        tokens = torch.cat([tokens, new], dim=1)
    return tokens[:, prompt.shape[1] :]


def measure_decoding(generated, repeats, config) -> dict:
    torch.manual_seed(0)
    model = Decoder(max_len=max(generated) + 8, **config).eval()
    prompt = torch.randint(0, config["n_vocab"], (1, 8))
    result = {
        "model": config,
        "prompt_tokens": 8,
        "generated": list(generated),
        "identical_tokens": [],
        "recompute": {"seconds": [], "all_seconds": [], "multiply_adds": []},
        "cache": {"seconds": [], "all_seconds": [], "multiply_adds": []},
    }
    print(
        f"\n3. greedy decoding, d_model {config['d_model']}, {config['num_heads']} heads, "
        f"{config['num_layers']} layers, "
        f"d_ff {config['ff_dim']}, {config['n_vocab']} words, prompt of 8 tokens"
    )
    print(
        f"{'tokens':>7} {'identical':>10} {'recompute (s)':>14} {'cache (s)':>10} {'speed-up':>9} "
        f"{'multiply-adds, recompute':>25} {'with the cache':>15}"
    )
    for steps in generated:
        outputs = {}
        for way, use_cache in (("recompute", False), ("cache", True)):
            tokens, ops = record_ops(generate, model, prompt, steps, use_cache)
            outputs[way] = tokens
            result[way]["multiply_adds"].append(matmul_flops(ops))
            del ops
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                again = generate(model, prompt, steps, use_cache)
                times.append(time.perf_counter() - start)
                assert torch.equal(again, tokens), "generation is not deterministic"
            result[way]["all_seconds"].append(times)
            result[way]["seconds"].append(statistics.median(times))
        result["identical_tokens"].append(bool(torch.equal(outputs["recompute"], outputs["cache"])))
        a, b = result["recompute"]["seconds"][-1], result["cache"]["seconds"][-1]
        print(
            f"{steps:>7} {str(result['identical_tokens'][-1]):>10} {a:>14.3f} {b:>10.3f} {a / b:>8.1f}x "
            f"{result['recompute']['multiply_adds'][-1]:>25,} {result['cache']['multiply_adds'][-1]:>15,}",
            flush=True,
        )
    return result


# ---------------------------------------------------------------------------------------------


def targets(attention: dict, decoding: dict) -> dict:
    """The two performance targets, from the measured figures (None where a run did not measure them)."""
    found = {}
    if TARGET_MEMORY_LENGTH in attention["lengths"]:
        i = attention["lengths"].index(TARGET_MEMORY_LENGTH)
        naive, tiled = attention["methods"]["naive"], attention["methods"]["tiled"]
        ratios = {"tensor_memory": tiled["tensor_bytes"][i] / naive["tensor_bytes"][i]}
        if naive["rss_bytes"][i] and tiled["rss_bytes"][i] is not None:
            ratios["peak_rss"] = tiled["rss_bytes"][i] / naive["rss_bytes"][i]
        found["tiled_memory"] = {
            "length": TARGET_MEMORY_LENGTH,
            "limit": TARGET_MEMORY_RATIO,
            "ratios": ratios,
            "met": all(r <= TARGET_MEMORY_RATIO for r in ratios.values()),
        }
    if TARGET_DECODE_TOKENS in decoding["generated"]:
        i = decoding["generated"].index(TARGET_DECODE_TOKENS)
        speedup = decoding["recompute"]["seconds"][i] / decoding["cache"]["seconds"][i]
        found["cache_speedup"] = {
            "tokens": TARGET_DECODE_TOKENS,
            "limit": TARGET_DECODE_SPEEDUP,
            "speedup": speedup,
            "identical_tokens": decoding["identical_tokens"][i],
            "met": speedup >= TARGET_DECODE_SPEEDUP and decoding["identical_tokens"][i],
        }
    return found


def print_targets(found: dict) -> None:
    print("\nperformance targets")
    memory = found.get("tiled_memory")
    if memory:
        ratios = ", ".join(f"{name.replace('_', ' ')} {value:.3f}" for name, value in memory["ratios"].items())
        print(
            f"  tiled_attention / naive peak memory at T = {memory['length']:,}: {ratios} "
            f"(target <= {memory['limit']}): {'met' if memory['met'] else 'NOT met'}"
        )
    else:
        print(f"  tiled_attention / naive peak memory at T = {TARGET_MEMORY_LENGTH:,}: not measured in this run")
    speed = found.get("cache_speedup")
    if speed:
        print(
            f"  decoding {speed['tokens']} tokens, cache vs recompute: {speed['speedup']:.1f}x faster, "
            f"identical tokens {speed['identical_tokens']} (target >= {speed['limit']:.0f}x, identical): "
            f"{'met' if speed['met'] else 'NOT met'}"
        )
    else:
        print(f"  decoding {TARGET_DECODE_TOKENS} tokens with and without the cache: not measured in this run")


def processor_name() -> str:
    """The CPU's model name (Linux), else what platform knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lengths", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--block-size", type=int, default=256)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--generate", type=int, nargs="+", default=[64, 128, 256, 512])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS measurements (one process each)")
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes, one repeat, no RSS: checks the plumbing in seconds"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    decoder_config = {"n_vocab": 1000, "d_model": 256, "num_heads": 4, "num_layers": 2, "ff_dim": 1024}
    layer_sizes = (256, 1024)
    if args.quick:
        args.lengths, args.block_size, args.generate, args.repeats, args.no_rss = [64, 128], 32, [8, 16], 1, True
        decoder_config = {"n_vocab": 50, "d_model": 32, "num_heads": 2, "num_layers": 1, "ff_dim": 64}
        layer_sizes = (16, 32)
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    started = time.perf_counter()
    print(
        f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} on {os.cpu_count()} cores"
    )
    attention = measure_attention(args.lengths, args.d, args.block_size, args.repeats, args.threads, not args.no_rss)
    layer_costs = measure_layer_costs(layer_sizes, d=args.d if not args.quick else 8)
    decoding = measure_decoding(args.generate, args.repeats, decoder_config)
    found = targets(attention, decoding)
    print_targets(found)
    load_after = os.getloadavg()
    print(
        f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    results = {
        "command": "python scripts/benchmark_attention_at_scale.py" + (" --quick" if args.quick else ""),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": "cpu",
        "processor": processor_name(),
        "cores": os.cpu_count(),
        "threads": args.threads,
        "dtype": "float32",
        "load_average_before": list(load_before),
        "load_average_after": list(load_after),
        "seconds": time.perf_counter() - started,
        "attention": attention,
        "layer_costs": layer_costs,
        "decoding": decoding,
        "targets": found,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
