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

This module is the program (the targets, the report, the file); the three parts are
:mod:`experiments.attention_memory`, :mod:`experiments.layer_costs` and :mod:`experiments.cached_decoding`.

How to run it, from the repository root (with the defaults, 4 minutes on the 2-core machine at load 2 to 5,
8 minutes at load 9 to 13)::

    .venv/bin/python -m experiments.benchmark_attention_at_scale
    .venv/bin/python -m experiments.benchmark_attention_at_scale --quick --out /tmp/quick.json  # seconds: plumbing
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

from experiments.attention_memory import measure_attention
from experiments.cached_decoding import measure_decoding
from experiments.cli import ASSETS, make_parser
from experiments.layer_costs import measure_layer_costs
from experiments.machine import cpu_model

DEFAULT_OUT = ASSETS / "attention_at_scale_results.json"
TARGET_MEMORY_LENGTH, TARGET_MEMORY_RATIO = 8192, 0.1
TARGET_DECODE_TOKENS, TARGET_DECODE_SPEEDUP = 512, 5.0


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


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.benchmark_attention_at_scale", __doc__)
    parser.add_argument(
        "--lengths", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096, 8192, 16384], help="part 1's lengths"
    )
    parser.add_argument("--block-size", type=int, default=256, help="keys per block of tiled_attention")
    parser.add_argument("--d", type=int, default=64, help="d_k = d_v of part 1 and d of part 2")
    parser.add_argument("--generate", type=int, nargs="+", default=[64, 128, 256, 512], help="part 3's token counts")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per figure (their median is kept)")
    parser.add_argument("--threads", type=int, default=1, help="PyTorch CPU threads")
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS measurements (one process each)")
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes, one repeat, no RSS: checks the plumbing in seconds"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the results file (default: the shipped one)")
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
        "command": "python -m experiments.benchmark_attention_at_scale" + (" --quick" if args.quick else ""),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": "cpu",
        "processor": cpu_model(),
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
