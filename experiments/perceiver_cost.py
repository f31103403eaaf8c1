"""Chapter 09's cost benchmark: N latents reading M inputs by cross-attention, against self-attention over every input.

    python -m experiments.perceiver_cost

For M from 16 to 16,384 inputs (powers of 2; ``--sizes``) of width d = 64, one forward pass (float32, eval mode,
no gradients, one thread) of chapter 09's reference ``PerceiverCrossAttention`` (Exercise 9.5; one head):

- ``cross``: N = 32 latents (``--latents``) read the M inputs: attention weights N x M;
- ``self``: the same block with every input as a query (the latents are the inputs themselves): M x M, what a
  Transformer layer over the M inputs computes.

The only difference between the two is the number of queries, so what changes is the attention's N x M against
M x M. Two figures each:

- *tensor memory*: the peak, during the call, of the bytes held by the tensors PyTorch's operators created in it
  (chapter 08's measure, :func:`experiments.attention_memory.tensor_memory`: every operator's new outputs are counted
  until their storage is freed; the inputs and the weights are not counted). It depends only on the code and the
  shapes, not on the machine or its load;
- *time*: the median wall-clock seconds of ``--repeats`` calls after one warm-up (the machine and its load are
  recorded: times differ between machines and with the load; the memory does not).

It prints the table, the crossover (the smallest M from which cross-attention is cheaper at every larger M, for
memory and for time) and the target: at M = 16,384 cross-attention's tensor memory is at most 1/50 of
self-attention's (the ratio's limit for large M is about N / M). It writes the figures to
``attention_course/assets/perceiver_cost_results.json`` and a log-log plot, where the slopes 1 (linear in M)
and 2 (quadratic) can be read, to ``perceiver_cost.svg`` (``--out``), with its alt text in the results.
``--quick`` measures M up to 1,024 only (seconds: tests).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from autograder.reference import ch09_attention_beyond_sequences as ch09
from experiments.attention_memory import tensor_memory
from experiments.cli import ASSETS, make_parser
from experiments.machine import describe_machine

RESULTS_FILE = "perceiver_cost_results.json"
PLOT_FILE = "perceiver_cost.svg"
SIZES = tuple(2**k for k in range(4, 15))  # 16 .. 16,384
QUICK_SIZES = tuple(2**k for k in range(4, 11))  # 16 .. 1,024
WIDTH = 64
LATENTS = 32
TARGET_M = 16_384
TARGET_RATIO = 1 / 50
WAYS = ("cross", "self")


def make_block(width: int = WIDTH, seed: int = 0) -> ch09.PerceiverCrossAttention:
    torch.manual_seed(seed)
    return ch09.PerceiverCrossAttention(width, width, num_heads=1).eval()


def inputs_for(way: str, M: int, latents: int, width: int = WIDTH, seed: int = 0):
    """``(queries, inputs)``: (1, N, d) latents or the inputs themselves, and (1, M, d) inputs."""
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(1, M, width, generator=generator)
    queries = torch.randn(1, latents, width, generator=generator) if way == "cross" else inputs
    return queries, inputs


def measure(sizes=SIZES, latents: int = LATENTS, repeats: int = 5, log=print) -> dict:
    block = make_block()
    weights = list(block.parameters())
    rows = {way: {"tensor_bytes": [], "seconds": []} for way in WAYS}
    log(f"{'M':>7} {'way':<6} {'tensor memory':>15} {'seconds':>10}")
    with torch.no_grad():
        for M in sizes:
            for way in WAYS:
                queries, inputs = inputs_for(way, M, latents)
                memory = tensor_memory(block, queries, inputs, existing=weights)
                block(queries, inputs)  # warm-up
                times = []
                for _ in range(repeats):
                    started = time.perf_counter()
                    block(queries, inputs)
                    times.append(time.perf_counter() - started)
                rows[way]["tensor_bytes"].append(memory)
                rows[way]["seconds"].append(statistics.median(times))
                log(f"{M:>7,} {way:<6} {memory / 2**20:>12.2f} MiB {statistics.median(times):>10.4f}")
    return rows


def crossover(sizes, cross, self_) -> int | None:
    """The smallest M of ``sizes`` from which ``cross`` < ``self_`` at that M and every larger one (None: never)."""
    found = None
    for M, a, b in reversed(list(zip(sizes, cross, self_))):
        if a < b:
            found = M
        else:
            break
    return found


def plot(results: dict, path: Path) -> str:
    """Draw the log-log plot to ``path`` (SVG); returns its alt text."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = results["sizes"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    panels = (("tensor_bytes", "peak tensor memory (bytes)"), ("seconds", "seconds per forward pass"))
    for ax, (key, label) in zip(axes, panels):
        for way, style, name in (
            ("cross", "o-", "cross-attention (N = 32 latents)"),
            ("self", "s--", "self-attention"),
        ):
            ax.loglog(sizes, results[way][key], style, label=name, base=2)
        for way, power, name in (("cross", 1, "slope 1 (linear in M)"), ("self", 2, "slope 2 (quadratic)")):
            end = results[way][key][-1]  # a guide line through the last point
            guide = [end * (M / sizes[-1]) ** power for M in sizes]
            ax.loglog(sizes, guide, ":", color="grey", linewidth=1, label=name, base=2)
        ax.set_xlabel("M (inputs)")
        ax.set_ylabel(label)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Cost as the number of inputs M grows (log-log: slope 1 is linear, slope 2 quadratic)", fontsize=9)
    fig.tight_layout()
    matplotlib.rcParams["svg.hashsalt"] = "perceiver_cost"
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    last = -1
    ratio = results["cross"]["tensor_bytes"][last] / results["self"]["tensor_bytes"][last]
    return (
        f"Two log-log plots against the number of inputs M, from {sizes[0]:,} to {sizes[last]:,}, with dotted "
        f"guide lines of slopes 1 and 2. Left: peak tensor memory; right: seconds per forward pass. Self-attention's "
        f"memory rises along the slope-2 line (quadratic in M) and cross-attention's along the slope-1 line "
        f"(linear); at M = {sizes[last]:,} cross-attention needs 1/{1 / ratio:.0f} of self-attention's memory. "
        f"The times follow the same slopes from about a thousand inputs on, with the jitter of a shared machine; "
        f"below that, fixed costs dominate both."
    )


def run_perceiver_cost(sizes=SIZES, out: Path | None = None, repeats: int = 5, latents: int = LATENTS, log=print):
    torch.set_num_threads(1)
    load_before = [round(x, 2) for x in os.getloadavg()]
    rows = measure(sizes, latents, repeats, log=log)
    results = {
        "description": "chapter 09: one forward pass of the reference PerceiverCrossAttention (one head, width 64), "
        "N latents reading M inputs (cross) against every input as a query (self): peak tensor memory and "
        "median seconds",
        "made_by": "python -m experiments.perceiver_cost" + (" --quick" if tuple(sizes) == QUICK_SIZES else ""),
        "width": WIDTH,
        "latents": latents,
        "heads": 1,
        "repeats": repeats,
        "sizes": list(sizes),
        **rows,
        "crossover": {
            key: crossover(sizes, rows["cross"][key], rows["self"][key]) for key in ("tensor_bytes", "seconds")
        },
        "machine": {**describe_machine(torch.device("cpu")), "load_average_at_start": load_before},
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }
    if TARGET_M in sizes:
        i = list(sizes).index(TARGET_M)
        ratio = rows["cross"]["tensor_bytes"][i] / rows["self"]["tensor_bytes"][i]
        results["target"] = {
            "M": TARGET_M,
            "memory_ratio": ratio,
            "time_ratio": rows["cross"]["seconds"][i] / rows["self"]["seconds"][i],
            "limit": TARGET_RATIO,
            "met": ratio <= TARGET_RATIO,
        }
    log(f"crossover (cross-attention cheaper from this M on): {results['crossover']}")
    if "target" in results:
        t = results["target"]
        log(
            f"at M = {TARGET_M:,}: cross / self tensor memory {t['memory_ratio']:.4f} = 1/{1 / t['memory_ratio']:.0f} "
            f"(target <= 1/50): {'met' if t['met'] else 'NOT met'}; time ratio {t['time_ratio']:.4f}"
        )
    else:
        log(f"at M = {TARGET_M:,}: not measured in this run")
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        results["plot"] = {"file": PLOT_FILE, "alt_text": plot(results, out / PLOT_FILE)}
        (out / RESULTS_FILE).write_text(json.dumps(results, indent=1) + "\n")
        log(f"wrote {out / RESULTS_FILE} and {out / PLOT_FILE}")
    return results


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.perceiver_cost", __doc__)
    parser.add_argument("--quick", action="store_true", help="M up to 1,024 only (seconds)")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per measurement (default 5)")
    parser.add_argument("--no-write", action="store_true", help="write no results (a dry run)")
    parser.add_argument("--out", type=Path, default=ASSETS, help=f"where {RESULTS_FILE} and {PLOT_FILE} go")
    args = parser.parse_args(argv)
    run_perceiver_cost(
        QUICK_SIZES if args.quick else SIZES, out=None if args.no_write else args.out, repeats=args.repeats
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
