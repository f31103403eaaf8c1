"""Benchmark: training throughput of the course's batched trainer against a per-sentence loop, and the
Transformer's beside the RNN's.

What it measures, in target tokens per second (the real, non-pad tokens of the French side,
EOS included: the tokens the loss is computed on; the same definition for every line):

1. **batched, CPU**: the course's batched trainer, i.e. chapter 05's ``train_step`` (masked
   cross-entropy, Adam, gradient clipping at 1.0) on batches made by ``length_bucketed_batches``
   and ``experiments.data.make_batch`` (the tensors of ``pad_batch``), float32, once per batch size
   of ``--batch-sizes`` (default: the configuration's, 64 for ``medium``, 256 and 512; on a 2-core CPU the
   larger batches are the faster ones per token);
2. **per-sentence loop, CPU**: the loop of the original PyTorch tutorial "Translation with a
   sequence to sequence network and attention": one sentence per optimisation step, the decoder
   stepped token by token in Python with teacher forcing, the per-token losses averaged
   (the same Adam and clipping as 1., so that only the loop differs). The encoder reads the
   sentence in one call (it is bidirectional, so it cannot be stepped one token at a time as the
   tutorial's unidirectional encoder was; this favours the per-sentence loop);
3. **Transformer, CPU**: the same trainer of 1. (same batches, same ``train_step``) on chapter 07's
   Transformer as ``experiments.transformer`` builds it (``--config medium``: d_model 80, 4 heads,
   d_ff 256, 2 + 2 layers, about as many parameters as the RNN);
4. **batched, GPU** and **Transformer, GPU** (only where CUDA is present): 1. and 3. on the GPU
   under bfloat16 autocast, as the training programs train there;
5. **chapter 05's notebook demo, CPU**: the seconds that the in-notebook training run of chapter 05
   ("Training in the notebook") takes: the same loop (4000 training sentences of
   ``make_splits(4000, 300, 0, seed=1)``, embeddings 32 and states 64, Adam at 3e-3, length-bucketed
   batches of 64, the validation loss every 10 steps) for its fixed 400 steps, on one thread as there.

The RNN lines train the attention model of ``experiments.translation`` (``GRUEncoder`` and
chapter 05's ``AttentionDecoder``, built by ``build_model``) at the size of one of its
configurations, ``--config medium`` by default (embeddings 64, hidden size 128: the size of the
shipped results), on a pool of sentences of the toy English -> French language, cycled as often as
needed. Each measurement runs in its own Python process (so that its peak memory is its own), warms
up for a few steps, then trains for ``--seconds`` of wall-clock time. It prints tokens per second,
the ratio batched / per-sentence on the CPU for each batch size against the target of 50x (the best
batch size counts: each side at its best setting; a per-sentence loop has only one), the
Transformer's tokens per second beside the RNN's, and peak memory: the resident set size of the
process (``resource.getrusage``, with the part added since just before the first step) and, on the
GPU, ``torch.cuda.max_memory_allocated``.

This module runs the lines and reports them; each line is measured, in a fresh Python process, by
:mod:`experiments.training_throughput` (the per-sentence loop and the notebook demo live there too).

How to run it, from the repository root:

    .venv/bin/python -m experiments.benchmark_training [--seconds 15] [--threads N] [--config medium]
                                                       [--batch-sizes 64 256 512] [--out FILE]

``--threads`` sets PyTorch's CPU threads for every line but the notebook demo's (default: PyTorch's
own default, usually one per core). ``--out FILE`` appends the run (every line's figures, the
ratios, the machine: CPU model, cores, threads, torch, and the load average at its start and end) to
the JSON file ``FILE``, creating it if needed, with the rates per second of wall-clock time and per
second of the process's CPU time. On one thread, a rate per CPU second is close to what an idle core
gives even while other work shares the machine (it then only gets fewer CPU seconds), which is what
makes runs on a shared machine comparable; with several threads, threads that wait for each other
count too, and the load changes everything. Chapter 05 quotes the runs recorded in
``attention_course/assets/benchmark_training.json``, made by running, several times,

    .venv/bin/python -m experiments.benchmark_training --threads 1 --out attention_course/assets/benchmark_training.json

(delete the file first to start a new series).

How long: about ``7 x (--seconds + 10 s)`` on a CPU-only machine (the 10 s start each process:
importing PyTorch, generating the sentences, warming up), so about three minutes with the default
15 s, the notebook demo's 15 s or so, and 6 more lines with CUDA. This is a benchmark, not a test:
the figures depend on the machine and on whatever else runs on it, so on a shared machine repeat it
(and try ``--threads 1``) before trusting an absolute number.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from experiments.cli import ROOT, make_parser
from experiments.config import CONFIGS
from experiments.machine import cpu_capability, cpu_model
from experiments.training_throughput import DEMO, KINDS, LABELS, measure, transformer_config

TARGET_RATIO = 50.0


def run_worker(kind: str, args, batch_size: int) -> dict:
    """Run one measurement in a fresh Python process (its own peak memory and thread pool)."""
    command = [sys.executable, "-m", "experiments.benchmark_training", "--worker", kind, "--seconds", str(args.seconds)]
    command += ["--config", args.config, "--pool", str(args.pool), "--batch-sizes", str(batch_size)]
    command += ["--demo-steps", str(args.demo_steps)]
    env = dict(os.environ)
    if args.threads is not None:
        command += ["--threads", str(args.threads)]
        env["OMP_NUM_THREADS"] = str(args.threads)
    completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if completed.returncode != 0:
        raise SystemExit(f"the {kind} measurement failed:\n{completed.stdout}\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def describe(result: dict) -> str:
    if result["kind"] == "cpu-notebook-demo":
        return (
            f"{LABELS[result['kind']] + ':':<38} {result['seconds']:9.1f} s for {result['steps']} steps  "
            f"[{result['threads']} thread, {result['cpu_seconds']:.1f} CPU seconds, last validation loss "
            f"{result['final_valid_loss']:.3f}; peak RSS {result['peak_rss_mb']:.0f} MB]"
        )
    added = result["peak_rss_mb"] - result["rss_before_mb"]
    memory = f"peak RSS {result['peak_rss_mb']:.0f} MB (+{added:.0f} MB while timed)"
    if "gpu_peak_mb" in result:
        memory += f", GPU peak allocated {result['gpu_peak_mb']:.0f} MB"
    where = f"{result['gpu']}, bf16 autocast" if "gpu" in result else f"{result['threads']} thread(s), float32"
    label = LABELS[result["kind"]] + (
        "" if result["kind"] == "cpu-per-sentence" else f", batches of {result['batch_size']}"
    )
    return (
        f"{label + ':':<38} {result['tokens_per_second']:9.0f} target tokens/s  "
        f"[{where}; {result['steps']} steps, {result['sentences']} sentences, {result['tokens']} tokens "
        f"in {result['seconds']:.1f} s, {result['tokens_per_cpu_second']:.0f} per CPU second; {memory}]"
    )


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.benchmark_training", __doc__)
    parser.add_argument("--seconds", type=float, default=15.0, help="timed training per measurement (default 15)")
    parser.add_argument("--threads", type=int, default=None, help="PyTorch CPU threads (default: PyTorch's default)")
    parser.add_argument("--config", choices=sorted(CONFIGS), default="medium", help="model size (default medium)")
    parser.add_argument("--pool", type=int, default=4000, help="sentences generated and cycled through")
    parser.add_argument(
        "--batch-sizes",
        type=int,
        nargs="+",
        default=None,
        help="batch sizes of the batched trainers (default: the configuration's, 256 and 512)",
    )
    parser.add_argument("--out", type=Path, default=None, help="append this run to a JSON file (see above)")
    parser.add_argument(
        "--demo-steps", type=int, default=DEMO["steps"], help="steps of the notebook demo (default: the notebook's)"
    )
    parser.add_argument("--worker", choices=KINDS, help=argparse.SUPPRESS)  # internal: one measurement
    args = parser.parse_args(argv)
    if args.worker is not None:
        batch_size = args.batch_sizes[0] if args.batch_sizes else CONFIGS[args.config].batch_size
        figures = measure(
            args.worker, args.config, args.seconds, args.threads, args.pool, batch_size, demo_steps=args.demo_steps
        )
        print(json.dumps(figures))
        return 0

    config = CONFIGS[args.config]
    sizes = transformer_config(args.config)
    batch_sizes = args.batch_sizes or sorted({config.batch_size, 256, 512})
    started, load_at_start = datetime.datetime.now(datetime.timezone.utc), os.getloadavg()
    print(
        f"models: the attention model of experiments.translation, config {args.config!r} (embeddings "
        f"{config.emb_dim}, hidden {config.hidden_dim}); the Transformer of experiments.transformer "
        f"(d_model {sizes.d_model}, {sizes.n_heads} heads, d_ff {sizes.d_ff}, {sizes.n_layers} + {sizes.n_layers} "
        f"layers); batches of {', '.join(map(str, batch_sizes))}; {args.seconds:g} s per measurement; "
        f"torch {torch.__version__}",
        flush=True,
    )
    devices = ["cpu"] + (["gpu"] if torch.cuda.is_available() else [])
    results = {}
    for device in devices:
        for model in ("batched", "transformer"):
            for batch_size in batch_sizes:
                results[(device, model, batch_size)] = run_worker(f"{device}-{model}", args, batch_size)
                print(describe(results[(device, model, batch_size)]), flush=True)
        if device == "cpu":
            results["per-sentence"] = run_worker("cpu-per-sentence", args, 1)
            print(describe(results["per-sentence"]), flush=True)
    if "gpu" not in devices:
        print("batched, GPU: skipped (CUDA is not available)")
    results["notebook-demo"] = run_worker("cpu-notebook-demo", args, DEMO["batch_size"])
    print(describe(results["notebook-demo"]), flush=True)

    def best(device: str, model: str) -> dict:
        return max((results[(device, model, b)] for b in batch_sizes), key=lambda r: r["tokens_per_second"])

    per_sentence = results["per-sentence"]["tokens_per_second"]
    rnn, tf = best("cpu", "batched"), best("cpu", "transformer")
    ratio = rnn["tokens_per_second"] / per_sentence
    verdict = "met" if ratio >= TARGET_RATIO else "NOT met"
    print(
        f"ratio batched / per-sentence on the CPU: {ratio:.1f}x with batches of {rnn['batch_size']} "
        f"(target >= {TARGET_RATIO:g}x: {verdict}); "
        + ", ".join(
            f"{results[('cpu', 'batched', b)]['tokens_per_second'] / per_sentence:.1f}x with batches of {b}"
            for b in batch_sizes
        )
    )
    cpu_ratio = (
        max(results[("cpu", "batched", b)]["tokens_per_cpu_second"] for b in batch_sizes)
        / results["per-sentence"]["tokens_per_cpu_second"]
    )
    print(
        f"the same ratio per CPU second (less sensitive to other work on a shared machine; with several threads "
        f"it also counts threads that wait): {cpu_ratio:.1f}x"
    )
    print(
        f"Transformer / RNN with attention, batched on the CPU: {tf['tokens_per_second']:.0f} vs "
        f"{rnn['tokens_per_second']:.0f} target tokens/s ({tf['tokens_per_second'] / rnn['tokens_per_second']:.2f}x)"
    )
    if "gpu" in devices:
        gpu_rnn, gpu_tf = best("gpu", "batched"), best("gpu", "transformer")
        print(f"ratio batched GPU / batched CPU: {gpu_rnn['tokens_per_second'] / rnn['tokens_per_second']:.1f}x")
        print(
            f"Transformer / RNN with attention, batched on the GPU: {gpu_tf['tokens_per_second']:.0f} vs "
            f"{gpu_rnn['tokens_per_second']:.0f} target tokens/s"
        )
    if args.out is not None:
        run = {
            "started": started.isoformat(timespec="seconds"),
            "load_average_at_start": [round(x, 2) for x in load_at_start],
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "torch": torch.__version__,
            "cpu": cpu_model(),
            "cpu_capability": cpu_capability(),
            "cores": os.cpu_count(),
            "threads": rnn["threads"],
            "config": args.config,
            "seconds_per_line": args.seconds,
            "per_sentence_tokens_per_second": per_sentence,
            "batched_tokens_per_second": {
                str(b): results[("cpu", "batched", b)]["tokens_per_second"] for b in batch_sizes
            },
            "transformer_tokens_per_second": {
                str(b): results[("cpu", "transformer", b)]["tokens_per_second"] for b in batch_sizes
            },
            "ratio": {str(b): results[("cpu", "batched", b)]["tokens_per_second"] / per_sentence for b in batch_sizes},
            "per_sentence_tokens_per_cpu_second": results["per-sentence"]["tokens_per_cpu_second"],
            "batched_tokens_per_cpu_second": {
                str(b): results[("cpu", "batched", b)]["tokens_per_cpu_second"] for b in batch_sizes
            },
            "ratio_per_cpu_second": {
                str(b): results[("cpu", "batched", b)]["tokens_per_cpu_second"]
                / results["per-sentence"]["tokens_per_cpu_second"]
                for b in batch_sizes
            },
            "notebook_demo": results["notebook-demo"],
            "lines": [r for r in results.values()],
        }
        record(args.out, run)
        print(f"run appended to {args.out}")
    return 0


def record(path: Path, run: dict) -> None:
    """Append ``run`` to the runs of the JSON file ``path`` (created with its header if missing)."""
    header = {
        "made_by": "python -m experiments.benchmark_training --threads 1 --out FILE",
        "what": "target tokens per second of chapter 05's batched trainer (train_step on length-bucketed batches) "
        "and of a per-sentence loop (PyTorch's classic translation tutorial), the same model, loss and optimiser, "
        "float32 on the CPU, per second of wall-clock time and per second of the process's CPU time; ratio = "
        "batched / per-sentence, per batch size; notebook_demo: the seconds (wall-clock and CPU) of chapter 05's "
        "in-notebook training run (400 steps, one thread). One entry of runs per run of the script; the load "
        "average says how busy the machine was.",
        "runs": [],
    }
    data = json.loads(path.read_text()) if path.exists() else header
    data["runs"].append(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
