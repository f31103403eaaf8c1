"""GPU check: a time-bounded run of the ``full`` configuration of ``experiments.translation`` on CUDA.

What it does: generates the data of ``--config full`` (200,000 training sentence pairs of the toy
English -> French language, embeddings 128, hidden size 256, batches of 128), then, with the
training program's own functions (``load_data``, ``train``, ``evaluate``; nothing re-implemented),
trains the attention model for at most ``--max-seconds`` (bf16 autocast on CUDA, no checkpoints),
evaluates greedy translations of the 5000 test pairs by source length, and does the same for the
model without attention if the remaining time allows (it is trained for less, or skipped, so that
the whole run stays inside ``--deadline``). Into ``--out`` (default ``_build/gpu_check/``, ignored
by git) it writes:

- ``accuracy_by_length.png``: exact match and BLEU on the test split by source length, with and
  without attention (the figure of chapter 05);
- ``loss_curve.png``: the training loss of every step and the validation loss after every
  (possibly partial) epoch, against the training step;
- ``summary.json``: the configuration, device, timings, per-step losses (subsampled), peak GPU
  memory, throughput in target tokens per second and, per model, the same fields as the training
  program's ``translation_results.json`` (history, parameters, exact match and BLEU by length, examples).

How to run it, from the repository root on a machine with a CUDA GPU:

    .venv/bin/python scripts/gpu_check.py [--max-seconds 120] [--deadline 400] [--out DIR]

Expected run time on one GPU: about 5 to 6 minutes with the defaults: half a minute to generate
the data on an idle CPU core (100 s on a heavily loaded 2-core machine), 2 x 120 s of training, a
few seconds of validation and evaluation per model, a few seconds for the figures. The script
shortens training (or skips the second model) so that it finishes within ``--deadline`` (400 s by
default, plus the few seconds it takes to start Python and import PyTorch), well inside
8 minutes. It has been run on a CPU only (``--allow-cpu``), not yet on a GPU.

Without CUDA it refuses (exit status 2) unless ``--allow-cpu`` is given: it then trains the
``tiny`` configuration on the CPU for a few seconds, which checks the script's plumbing (data,
training, evaluation, figures, JSON) and nothing about the GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
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

from attention_course.data import PAD_ID  # noqa: E402
from experiments import translation  # noqa: E402

DEFAULT_OUT = ROOT / "_build" / "gpu_check"
MODELS = (("attention", "with attention", "tab:blue", "o"), ("plain", "without attention", "tab:orange", "s"))
MIN_TRAIN_SECONDS = 0.25  # of --max-seconds: a shorter run of the second model is not worth its evaluation
MAX_CURVE_POINTS = 2000


@contextlib.contextmanager
def recording_steps(records: list):
    """Record ``(time, loss, target tokens)`` of every training step of ``experiments.translation.train``.

    ``train`` calls the module-level name ``train_step`` at every step; this wraps it for the
    duration of the block (and restores it after), so that the training loop itself is reused as is.
    """
    original = translation.train_step

    def step(model, batch, optimizer, pad_id, **kwargs):
        loss = original(model, batch, optimizer, pad_id, **kwargs)  # loss.item() has synchronised
        records.append((time.perf_counter(), loss, int((batch["tgt_out"] != pad_id).sum())))
        return loss

    translation.train_step = step
    try:
        yield records
    finally:
        translation.train_step = original


def subsample(values: list, limit: int = MAX_CURVE_POINTS) -> list:
    if len(values) <= limit:
        return list(values)
    return [values[int(i)] for i in np.linspace(0, len(values) - 1, limit)]


def plot_accuracy(models: dict, path: Path, title_suffix: str) -> None:
    bins = [f"{low}-{high}" for low, high in translation.LENGTH_BINS]
    bins = [name for name in bins if any(name in m["by_length"] for m in models.values())]
    centres = [np.mean([int(x) for x in name.split("-")]) for name in bins]
    fig, (ax_em, ax_bleu) = plt.subplots(1, 2, figsize=(10, 3.6))
    for kind, label, colour, marker in MODELS:
        if kind not in models:
            continue
        table = models[kind]["by_length"]
        present = [(c, n) for c, n in zip(centres, bins) if n in table]
        xs = [c for c, _ in present]
        ax_em.plot(xs, [100 * table[n]["exact_match"] for _, n in present], marker=marker, color=colour, label=label)
        ax_bleu.plot(xs, [table[n]["bleu"] for _, n in present], marker=marker, color=colour, label=label)
    ax_em.set(title=f"Exact match, test split{title_suffix}", xlabel="source length (tokens)", ylim=(0, 102))
    ax_em.set_ylabel("sentences translated exactly (%)")
    ax_bleu.set(title=f"BLEU, test split{title_suffix}", xlabel="source length (tokens)", ylabel="BLEU", ylim=(0, 102))
    for ax in (ax_em, ax_bleu):
        ax.set_xticks(centres, bins)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_losses(models: dict, curves: dict, steps_per_epoch: int, path: Path, title_suffix: str) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for kind, label, colour, _ in MODELS:
        if kind not in models:
            continue
        steps, losses = np.asarray(curves[kind]["step"]), np.asarray(curves[kind]["loss"])
        window = max(1, min(50, len(losses) // 20))
        if window > 1:
            ax.plot(steps, losses, color=colour, alpha=0.25, linewidth=0.6)
            losses = np.convolve(losses, np.ones(window) / window, mode="valid")
            steps = steps[window - 1 :]
        mean = f" (running mean of {window} steps)" if window > 1 else ""
        ax.plot(steps, losses, color=colour, label=f"{label}: training batches{mean}")
        history = models[kind]["history"]
        ax.plot(
            [epoch * steps_per_epoch for epoch in history["epoch"]], history["valid_loss"], linestyle="none",
            marker="o", color=colour, markeredgecolor="black", label=f"{label}: validation set, after each epoch",
        )  # fmt: skip
    ax.set(yscale="log", xlabel="training step", ylabel="masked cross-entropy (nats/token)")
    ax.set_title(f"Training curves{title_suffix}")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def refuse_without_cuda() -> int:
    print(
        "gpu_check.py: CUDA is not available here "
        f"(torch {torch.__version__}, built with CUDA {torch.version.cuda}, torch.cuda.is_available() is False).\n"
        "This check trains the 'full' configuration of experiments.translation on a GPU; run it on a machine "
        "with a CUDA GPU, or pass --allow-cpu for a tiny CPU run that only tests the script's plumbing.",
        file=sys.stderr,
    )
    return 2


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default _build/gpu_check)")
    parser.add_argument(
        "--max-seconds", type=float, default=None, help="training time per model (default 120 on CUDA, 3 on CPU)"
    )
    parser.add_argument(
        "--deadline", type=float, default=None, help="seconds for the whole run (default 400 on CUDA, 60 on CPU)"
    )
    parser.add_argument(
        "--config", choices=sorted(translation.CONFIGS), default=None, help="default full (tiny on CPU)"
    )
    parser.add_argument("--model", choices=["both", "attention"], default="both", help="also train the plain model?")
    parser.add_argument("--allow-cpu", action="store_true", help="without CUDA, run a tiny bounded version on the CPU")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    cuda = torch.cuda.is_available()
    if not cuda and not args.allow_cpu:
        return refuse_without_cuda()
    device = translation.pick_device("cuda" if cuda else "cpu")
    config = translation.CONFIGS[args.config or ("full" if cuda else "tiny")]
    max_seconds = args.max_seconds if args.max_seconds is not None else (120.0 if cuda else 3.0)
    deadline = args.deadline if args.deadline is not None else (400.0 if cuda else 60.0)
    suffix = "" if cuda else " (CPU plumbing run)"

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {message}", flush=True)

    gpu_name = torch.cuda.get_device_name(device) if cuda else None
    log(f"device {device}{f' ({gpu_name})' if gpu_name else ''}, torch {torch.__version__}, config {config.name!r}")
    src_vocab, tgt_vocab, splits, encoded = translation.load_data(config)
    encoded["vocab_sizes"] = (len(src_vocab), len(tgt_vocab))
    data_seconds = time.perf_counter() - started
    log(f"data: {len(splits['train'])} train / {len(splits['valid'])} valid / {len(splits['test'])} test pairs")

    models, curves, extras, skipped = {}, {}, {}, {}
    last_eval_seconds = 0.0
    for kind in ("attention", "plain") if args.model == "both" else ("attention",):
        # leave time for the evaluation (twice the last one, or a guess before the first) and a margin
        eval_reserve = 2 * last_eval_seconds if models else (20.0 if cuda else 2.0)
        left = deadline - (time.perf_counter() - started) - eval_reserve - 10.0
        budget = min(max_seconds, left)
        if budget < max_seconds:
            if budget < MIN_TRAIN_SECONDS * max_seconds:
                skipped[kind] = f"not enough time left ({max(left, 0):.0f} s of training would remain)"
                log(f"{kind}: skipped, {skipped[kind]}")
                continue
            log(f"{kind}: training for {budget:.0f} s instead of {max_seconds:.0f} s to finish within the deadline")
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
        records = []
        t0 = time.perf_counter()
        with recording_steps(records):
            model, history = translation.train(
                kind, config, encoded, device, workdir=None, max_seconds=budget, show_progress=not args.quiet, log=log
            )
        train_seconds = time.perf_counter() - t0
        gpu_peak = torch.cuda.max_memory_allocated(device) / 2**20 if cuda else None
        t1 = time.perf_counter()
        evaluation = translation.evaluate(model, splits["test"], encoded["test"], tgt_vocab, device)
        last_eval_seconds = time.perf_counter() - t1
        log(
            f"{kind}: {len(records)} steps in {train_seconds:.0f} s, test exact match {evaluation['exact_match']:.3f}, "
            f"BLEU {evaluation['bleu']:.1f} (evaluation {last_eval_seconds:.1f} s)"
        )
        models[kind] = {
            "history": history,
            "parameters": sum(p.numel() for p in model.parameters()),
            **evaluation,
        }
        times = [t - t0 for t, _, _ in records]
        timed_tokens = sum(n for _, _, n in records[1:])  # after the first step (warm-up)
        extras[kind] = {
            "budget_seconds": budget,
            "train_seconds": train_seconds,
            "eval_seconds": last_eval_seconds,
            "steps": len(records),
            "epochs": history["epoch"][-1] if history["epoch"] else 0.0,
            "target_tokens": sum(n for _, _, n in records),
            "target_tokens_per_second": timed_tokens / (times[-1] - times[0]) if len(records) > 1 else None,
            "gpu_peak_allocated_mb": gpu_peak,
        }
        curves[kind] = {
            "step": subsample(list(range(1, len(records) + 1))),
            "seconds": subsample(times),
            "loss": subsample([loss for _, loss, _ in records]),
        }
        del model
        if cuda:
            torch.cuda.empty_cache()

    args.out.mkdir(parents=True, exist_ok=True)
    figures = {"accuracy_by_length": args.out / "accuracy_by_length.png", "loss_curve": args.out / "loss_curve.png"}
    plot_accuracy(models, figures["accuracy_by_length"], suffix)
    steps_per_epoch = -(-len(encoded["train"]) // config.batch_size)  # length_bucketed_batches keeps the last one
    plot_losses(models, curves, steps_per_epoch, figures["loss_curve"], suffix)
    summary = {
        "config": dataclasses.asdict(config),
        "device": str(device),
        "gpu": gpu_name,
        "cuda_available": cuda,
        "torch": torch.__version__,
        "cuda_version": torch.version.cuda,
        "world_size": 1,
        "max_seconds": max_seconds,
        "deadline_seconds": deadline,
        "data_seconds": data_seconds,
        "total_seconds": time.perf_counter() - started,
        "pad_id": PAD_ID,
        "figures": {name: path.name for name, path in figures.items()},
        "skipped": skipped,
        "models": models,
        "runs": extras,
        "loss_curves": curves,
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    log(f"wrote {figures['accuracy_by_length']}, {figures['loss_curve']} and {args.out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
