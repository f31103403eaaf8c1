"""GPU check: every model of the course trained and evaluated on one CUDA GPU, time-bounded.

What it trains, with the training programs' own functions (nothing re-implemented):

1. the six attention variants of chapter 05 (``experiments.variants.run_variants``: no attention, dot,
   general, additive, scaled dot product, multi-head), its ``full`` configuration;
2. chapter 07's Transformer and the RNN with attention beside it (``experiments.transformer.run_transformer``),
   its ``full`` configuration (trained on sentences of at most 20 words, tested on all lengths);
3. chapter 08's attention at length (no training): the reference ``tiled_attention`` (blocks of 256 keys)
   against ``F.scaled_dot_product_attention`` restricted to PyTorch's flash kernel and against the formula
   with the whole score matrix, in bfloat16, batch 1, 8 heads of size 64, for 1,024 to 16,384 tokens: the
   extra GPU memory of one call (``torch.cuda.max_memory_allocated`` above what was allocated before it; an
   out-of-memory error is recorded as such) and its time (median of 5 calls after a warm-up, synchronised).

On CUDA every forward pass runs under bf16 autocast. Each model trains for at most ``--max-seconds``
(default 30 s on CUDA), then is evaluated (greedy translations of the test split by source length).
Into ``--out`` (default ``_build/gpu_check/``, ignored by git) it writes:

- ``summary.json``: the device, the timings of every stage, and the two programs' results (per model:
  parameters, steps, training seconds, target tokens per second, exact match and BLEU by source length);
- ``accuracy_by_length.png``: exact match and BLEU by source length for every model;
- ``throughput.png``: target tokens per second and parameters of every model;
- ``attention_at_scale.png``: chapter 08's memory and time against the sequence length.

How to run it, from the repository root on a machine with a CUDA GPU:

    .venv/bin/python scripts/gpu_check.py [--max-seconds 30] [--out DIR]

Expected run time on one GPU: about 6 minutes with the defaults (8 models x (30 s of training + a few
seconds of evaluation), plus generating the data of both programs, about a minute, plus chapter 08's
attention, under half a minute), under the 8 minutes the check is allowed; ``--max-seconds`` trades
training time for accuracy. One run's ``summary.json`` ships as ``attention_course/assets/gpu_check_results.json``
(where and when it was made: ``attention_course/assets/__init__.py``), which chapters 05, 07 and 08 read.

Without CUDA it refuses (exit status 2) unless ``--allow-cpu`` is given: it then trains the ``tiny``
configurations on the CPU for a few seconds per model, which checks the script's plumbing (data,
training, evaluation, figures, JSON) and nothing about the GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from autograder.reference.ch08_attention_at_scale import tiled_attention  # noqa: E402
from experiments import transformer, variants  # noqa: E402
from experiments.evaluation import LENGTH_BINS  # noqa: E402

DEFAULT_OUT = ROOT / "_build" / "gpu_check"


def all_models(summary: dict) -> dict:
    """name -> results of one model (the variants', then the Transformer experiment's), in a stable order."""
    models = {f"variant: {v['label']}": v for v in summary["variants"].get("variants", {}).values()}
    models.update({m["label"]: m for m in summary["transformer"].get("models", {}).values()})
    return models


def plot_accuracy(models: dict, path: Path, title_suffix: str) -> None:
    bins = [f"{low}-{high}" for low, high in LENGTH_BINS]
    bins = [name for name in bins if any(name in m["by_length"] for m in models.values())]
    centres = [np.mean([int(x) for x in name.split("-")]) for name in bins]
    fig, (ax_em, ax_bleu) = plt.subplots(1, 2, figsize=(12, 4.4))
    colours = plt.get_cmap("tab10").colors
    for index, (label, model) in enumerate(models.items()):
        present = [(c, n) for c, n in zip(centres, bins) if n in model["by_length"]]
        xs = [c for c, _ in present]
        style = {"color": colours[index % 10], "marker": "os^vD<>p"[index % 8], "label": label}
        ax_em.plot(xs, [100 * model["by_length"][n]["exact_match"] for _, n in present], **style)
        ax_bleu.plot(xs, [model["by_length"][n]["bleu"] for _, n in present], **style)
    ax_em.set(title=f"Exact match, test split{title_suffix}", xlabel="source length (words)", ylim=(0, 102))
    ax_em.set_ylabel("sentences translated exactly (%)")
    ax_bleu.set(title=f"BLEU, test split{title_suffix}", xlabel="source length (words)", ylabel="BLEU", ylim=(0, 102))
    for ax in (ax_em, ax_bleu):
        ax.set_xticks(centres, bins)
    ax_bleu.legend(fontsize="x-small", loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_throughput(models: dict, path: Path, title_suffix: str) -> None:
    labels = list(models)
    fig, (ax_speed, ax_size) = plt.subplots(1, 2, figsize=(12, 0.45 * len(labels) + 1.6))
    ax_speed.barh(labels, [m["target_tokens_per_second"] for m in models.values()], color="tab:blue")
    ax_speed.set(title=f"Training throughput{title_suffix}", xlabel="target tokens per second")
    ax_size.barh(labels, [m["parameters"] for m in models.values()], color="tab:gray")
    ax_size.set(title="Parameters", xlabel="number of parameters")
    ax_size.set_yticks(range(len(labels)), [])
    ax_speed.invert_yaxis()
    ax_size.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def attention_at_scale(device: torch.device, lengths, block_size: int = 256, heads: int = 8, d: int = 64) -> dict:
    """Chapter 08 on one device: extra memory and time of one attention call, three ways, by length.

    On CUDA, bfloat16 and ``F.scaled_dot_product_attention`` restricted to the flash kernel; on the CPU
    (plumbing runs), float32, the default kernel choice, and no memory figure.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel

    cuda = device.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32

    def naive(Q, K, V):
        return torch.softmax(Q @ K.transpose(-2, -1) / d**0.5, dim=-1) @ V

    def flash(Q, K, V):
        if not cuda:
            return F.scaled_dot_product_attention(Q, K, V)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(Q, K, V)

    methods = {"naive": naive, "tiled": lambda Q, K, V: tiled_attention(Q, K, V, block_size)[0], "sdpa_flash": flash}
    results = {
        "device": str(device),
        "dtype": str(dtype),
        "heads": heads,
        "d": d,
        "block_size": block_size,
        "lengths": list(lengths),
        "methods": {name: {"peak_mb": [], "seconds": []} for name in methods},
    }
    for length in lengths:
        generator = torch.Generator(device=device).manual_seed(length)
        Q, K, V = (torch.randn(1, heads, length, d, generator=generator, device=device, dtype=dtype) for _ in range(3))
        for name, fn in methods.items():
            row = results["methods"][name]
            try:
                if cuda:
                    torch.cuda.synchronize(device)
                    torch.cuda.reset_peak_memory_stats(device)
                    before = torch.cuda.memory_allocated(device)
                out = fn(Q, K, V)
                if cuda:
                    torch.cuda.synchronize(device)
                    row["peak_mb"].append((torch.cuda.max_memory_allocated(device) - before) / 2**20)
                else:
                    row["peak_mb"].append(None)
                del out
                times = []
                for _ in range(5):
                    start = time.perf_counter()
                    fn(Q, K, V)
                    if cuda:
                        torch.cuda.synchronize(device)
                    times.append(time.perf_counter() - start)
                row["seconds"].append(float(np.median(times)))
            except torch.OutOfMemoryError:
                row["peak_mb"].append("out of memory")
                row["seconds"].append(None)
                if cuda:
                    torch.cuda.empty_cache()
        del Q, K, V
    return results


def plot_attention_at_scale(results: dict, path: Path, title_suffix: str) -> None:
    fig, (ax_memory, ax_time) = plt.subplots(1, 2, figsize=(12, 4.4))
    for name, row in results["methods"].items():
        pairs = [(n, m) for n, m in zip(results["lengths"], row["peak_mb"]) if isinstance(m, float)]
        if pairs:
            ax_memory.plot(*zip(*pairs), marker="o", label=name)
        pairs = [(n, t) for n, t in zip(results["lengths"], row["seconds"]) if t is not None]
        if pairs:
            ax_time.plot(*zip(*pairs), marker="o", label=name)
    for ax in (ax_memory, ax_time):
        ax.set(xscale="log", yscale="log", xlabel="sequence length T")
        ax.legend(fontsize="small")
    ax_memory.set(title=f"Extra memory of one call{title_suffix}", ylabel="MiB")
    ax_time.set(title=f"Time of one call{title_suffix}", ylabel="seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def refuse_without_cuda() -> int:
    print(
        "gpu_check.py: CUDA is not available here "
        f"(torch {torch.__version__}, built with CUDA {torch.version.cuda}, torch.cuda.is_available() is False).\n"
        "This check trains every model of the course in its 'full' configuration on a GPU; run it on a machine "
        "with a CUDA GPU, or pass --allow-cpu for a tiny CPU run that only tests the script's plumbing.",
        file=sys.stderr,
    )
    return 2


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default _build/gpu_check)")
    parser.add_argument(
        "--max-seconds", type=float, default=None, help="training time per model (default 30 on CUDA, 2 on CPU)"
    )
    parser.add_argument("--config", default=None, help="configuration of both programs (default full; tiny on CPU)")
    parser.add_argument("--allow-cpu", action="store_true", help="without CUDA, run a tiny bounded version on the CPU")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    cuda = torch.cuda.is_available()
    if not cuda and not args.allow_cpu:
        return refuse_without_cuda()
    device = torch.device("cuda" if cuda else "cpu")
    config = args.config or ("full" if cuda else "tiny")
    max_seconds = args.max_seconds if args.max_seconds is not None else (30.0 if cuda else 2.0)
    suffix = "" if cuda else " (CPU plumbing run)"

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {message}", flush=True)

    gpu_name = torch.cuda.get_device_name(device) if cuda else None
    log(f"device {device}{f' ({gpu_name})' if gpu_name else ''}, torch {torch.__version__}, config {config!r}")
    stages = {}
    t0 = time.perf_counter()
    variant_results = variants.run_variants(config, out=None, device=device, max_seconds=max_seconds, log=log)
    stages["variants"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    transformer_results = transformer.run_transformer(
        config, out=None, device=device, max_seconds=max_seconds, show_progress=not args.quiet, log=log
    )
    stages["transformer"] = time.perf_counter() - t0
    if cuda:
        peak = torch.cuda.max_memory_allocated(device) / 2**20
    t0 = time.perf_counter()
    lengths = [1024, 4096, 16384] if cuda else [64, 128]
    attention_results = attention_at_scale(device, lengths, block_size=256 if cuda else 32)
    stages["attention_at_scale"] = time.perf_counter() - t0
    for name, row in attention_results["methods"].items():
        figures = ", ".join(
            f"T={n}: {m if not isinstance(m, float) else f'{m:.0f} MiB'}, {t if t is None else f'{t * 1e3:.1f} ms'}"
            for n, m, t in zip(lengths, row["peak_mb"], row["seconds"])
        )
        log(f"chapter 08, {name}: {figures}")

    summary = {
        "device": str(device),
        "gpu": gpu_name,
        "cuda_available": cuda,
        "torch": torch.__version__,
        "cuda_version": torch.version.cuda,
        "config": config,
        "max_seconds_per_model": max_seconds,
        "gpu_peak_allocated_mb": peak if cuda else None,
        "stage_seconds": stages,
        "variants": variant_results,
        "transformer": transformer_results,
        "attention_at_scale": attention_results,
    }
    models = all_models(summary)
    args.out.mkdir(parents=True, exist_ok=True)
    figures = {
        "accuracy_by_length": "accuracy_by_length.png",
        "throughput": "throughput.png",
        "attention_at_scale": "attention_at_scale.png",
    }
    plot_accuracy(models, args.out / figures["accuracy_by_length"], suffix)
    plot_throughput(models, args.out / figures["throughput"], suffix)
    plot_attention_at_scale(attention_results, args.out / figures["attention_at_scale"], suffix)
    summary["figures"] = figures
    summary["total_seconds"] = time.perf_counter() - started
    keys = ("parameters", "train_seconds", "target_tokens_per_second", "exact_match", "bleu")
    summary["table"] = {
        label: {"updates": model.get("steps", model.get("updates")), **{key: model[key] for key in keys}}
        for label, model in models.items()
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    for label, row in summary["table"].items():
        log(
            f"{label:<44} {row['parameters']:>9,} parameters {row['target_tokens_per_second']:>9.0f} tokens/s "
            f"exact match {row['exact_match']:.3f} BLEU {row['bleu']:.1f}"
        )
    log(f"wrote {args.out / 'summary.json'} and the figures; total {summary['total_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
