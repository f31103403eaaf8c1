"""GPU check: every model of the course trained and evaluated on one CUDA GPU, time-bounded.

What it trains, with the training programs' own functions (nothing re-implemented):

1. the six attention variants of chapter 05 (``experiments.variants.run_variants``: no attention, dot,
   general, additive, scaled dot product, multi-head), its ``full`` configuration;
2. chapter 07's Transformer and the RNN with attention beside it (``experiments.transformer.run_transformer``),
   its ``full`` configuration (trained on sentences of at most 20 words, tested on all lengths).

On CUDA every forward pass runs under bf16 autocast. Each model trains for at most ``--max-seconds``
(default 30 s on CUDA), then is evaluated (greedy translations of the test split by source length).
Into ``--out`` (default ``_build/gpu_check/``, ignored by git) it writes:

- ``summary.json``: the device, the timings of every stage, and the two programs' results (per model:
  parameters, steps, training seconds, target tokens per second, exact match and BLEU by source length);
- ``accuracy_by_length.png``: exact match and BLEU by source length for every model;
- ``throughput.png``: target tokens per second and parameters of every model.

How to run it, from the repository root on a machine with a CUDA GPU:

    .venv/bin/python scripts/gpu_check.py [--max-seconds 30] [--out DIR]

Expected run time on one GPU: about 6 minutes with the defaults (8 models x (30 s of training + a few
seconds of evaluation), plus generating the data of both programs, about a minute), under the 8 minutes
the check is allowed; ``--max-seconds`` trades training time for accuracy. Where it was run and what it
measured is recorded in the chapter that quotes it (chapter 07).

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
    }
    models = all_models(summary)
    args.out.mkdir(parents=True, exist_ok=True)
    figures = {"accuracy_by_length": "accuracy_by_length.png", "throughput": "throughput.png"}
    plot_accuracy(models, args.out / figures["accuracy_by_length"], suffix)
    plot_throughput(models, args.out / figures["throughput"], suffix)
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
