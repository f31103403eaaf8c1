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

How to run it, from the repository root:

    .venv/bin/python scripts/benchmark_training.py [--seconds 15] [--threads N] [--config medium]
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

    .venv/bin/python scripts/benchmark_training.py --threads 1 --out attention_course/assets/benchmark_training.json

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
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from attention_course.data import BOS_ID, PAD_ID  # noqa: E402
from attention_course.toy_translation import build_vocabularies, encode_pairs, generate_pairs, make_splits  # noqa: E402
from attention_course.translation import GRUEncoder, Seq2Seq  # noqa: E402
from autograder.reference.ch05_gpu_training import (  # noqa: E402
    AttentionDecoder,
    length_bucketed_batches,
    masked_cross_entropy,
    pad_batch,
    train_step,
)
from experiments import transformer  # noqa: E402
from experiments.config import CONFIGS  # noqa: E402
from experiments.data import make_batch  # noqa: E402
from experiments.machine import cpu_capability, cpu_model  # noqa: E402
from experiments.models import build_model  # noqa: E402
from experiments.training import seed_everything  # noqa: E402

TARGET_RATIO = 50.0
KINDS = ("cpu-batched", "cpu-per-sentence", "cpu-transformer", "gpu-batched", "gpu-transformer", "cpu-notebook-demo")
LABELS = {
    "cpu-batched": "batched, CPU",
    "cpu-per-sentence": "per-sentence loop, CPU",
    "cpu-transformer": "Transformer, CPU",
    "gpu-batched": "batched, GPU",
    "gpu-transformer": "Transformer, GPU",
    "cpu-notebook-demo": "chapter 05's notebook demo, CPU",
}
# Chapter 05's in-notebook run ("Training in the notebook"): its data, sizes and fixed number of steps
# (tests/test_training_scripts.py keeps them equal to the notebook cell's).
DEMO = {
    "num_train": 4000,
    "num_valid": 300,
    "data_seed": 1,
    "seed": 0,  # torch.manual_seed before the model is built
    "emb_dim": 32,
    "hidden_dim": 64,
    "batch_size": 64,
    "lr": 3e-3,
    "steps": 400,
    "validate_every": 10,
    "threads": 1,
}


def rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (ru_maxrss is in kB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def sentence_pool(size: int, seed: int = 0):
    """``size`` encoded ``(source ids, target ids)`` pairs of the toy language (both ending with EOS)."""
    src_vocab, tgt_vocab = build_vocabularies()
    pairs = [(e, f) for e, f in generate_pairs(size, seed=seed) if len(e.split()) <= 40]  # as make_splits
    pairs = encode_pairs(pairs, src_vocab, tgt_vocab)
    return pairs, (len(src_vocab), len(tgt_vocab))


def decoder_step(decoder, token, hidden, enc_outputs, src_mask):
    """One step of chapter 05's ``AttentionDecoder`` for one sentence, with its own weights: the same
    computation as its ``forward`` on a single token, but also returning the new GRU state (which
    ``forward`` does not). ``token`` (1, 1) long, ``hidden`` (1, d); returns ``(logits (1, V), hidden (1, d))``."""
    state, new_hidden = decoder.rnn(decoder.embedding(token), hidden.unsqueeze(0))
    state = state[:, 0]  # (1, d)
    scores = (enc_outputs @ state.unsqueeze(-1)).squeeze(-1)  # (1, S)
    weights = torch.softmax(scores.masked_fill(~src_mask, float("-inf")), dim=-1)
    context = (weights.unsqueeze(1) @ enc_outputs).squeeze(1)  # (1, d)
    attentional = torch.tanh(decoder.combine(torch.cat([context, state], dim=-1)))
    return decoder.out(attentional), new_hidden[0]


def per_sentence_loss(model, source: list[int], target: list[int]):
    """The tutorial's loss of one sentence: the decoder stepped token by token in Python, fed the gold
    previous token (teacher forcing), the per-token cross-entropies averaged."""
    src = torch.tensor([source])
    lengths = torch.tensor([len(source)])
    enc_outputs, hidden = model.encoder(src, lengths)
    mask = model.source_mask(src, lengths)
    gold = torch.tensor(target).view(-1, 1)
    token = torch.tensor([[BOS_ID]])
    loss = 0.0
    for t in range(len(target)):
        logits, hidden = decoder_step(model.decoder, token, hidden, enc_outputs, mask)
        loss = loss + F.cross_entropy(logits, gold[t])
        token = gold[t].view(1, 1)
    return loss / len(target)


def per_sentence_step(model, optimizer, source, target, clip_norm: float = 1.0) -> float:
    """One optimisation step on one sentence (the tutorial's ``train``), clipped as in ``train_step``."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = per_sentence_loss(model, source, target)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    return loss.item()


def measure_notebook_demo(steps: int = DEMO["steps"]) -> dict:
    """Chapter 05's in-notebook training run, timed: the loop of its "Training in the notebook" cell with the
    reference answers, :data:`DEMO`'s sizes, for ``steps`` steps (the notebook's 400 by default), on one
    thread. Returns the seconds it took (wall and CPU) and its last validation loss."""
    torch.set_num_threads(DEMO["threads"])

    def notebook_batch(pairs):  # the notebook's make_batch, with chapter 05's pad_batch
        src, lengths = pad_batch([s for s, _ in pairs], PAD_ID)
        tgt_in, _ = pad_batch([[BOS_ID] + t[:-1] for _, t in pairs], PAD_ID)
        tgt_out, _ = pad_batch([t for _, t in pairs], PAD_ID)
        return {"src": src, "lengths": lengths, "tgt_in": tgt_in, "tgt_out": tgt_out}

    splits = make_splits(DEMO["num_train"], DEMO["num_valid"], 0, seed=DEMO["data_seed"])
    src_vocab, tgt_vocab = build_vocabularies()
    train_data = encode_pairs(splits["train"], src_vocab, tgt_vocab)
    valid_batch = notebook_batch(encode_pairs(splits["valid"], src_vocab, tgt_vocab))
    src_lengths = [len(src) for src, _ in train_data]
    start, cpu_start = time.perf_counter(), time.process_time()
    torch.manual_seed(DEMO["seed"])
    model = Seq2Seq(
        GRUEncoder(len(src_vocab), DEMO["emb_dim"], DEMO["hidden_dim"]),
        AttentionDecoder(len(tgt_vocab), DEMO["emb_dim"], DEMO["hidden_dim"]),
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=DEMO["lr"])
    step, epoch, valid_loss = 0, 0, float("nan")
    while step < steps:
        for indices in length_bucketed_batches(src_lengths, DEMO["batch_size"], seed=epoch):
            train_step(model, notebook_batch([train_data[i] for i in indices]), optimizer, PAD_ID)
            step += 1
            if step % DEMO["validate_every"] == 0:
                with torch.no_grad():
                    model.eval()
                    logits = model(valid_batch["src"], valid_batch["lengths"], valid_batch["tgt_in"])
                    model.train()
                valid_loss = float(masked_cross_entropy(logits.float(), valid_batch["tgt_out"], PAD_ID))
            if step == steps:
                break
        epoch += 1
    return {
        "kind": "cpu-notebook-demo",
        "steps": step,
        "threads": torch.get_num_threads(),
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu_start,
        "final_valid_loss": valid_loss,
        "peak_rss_mb": rss_mb(),
    }


def transformer_config(config_name: str) -> transformer.Config:
    """The Transformer of ``experiments.transformer`` sized for ``config_name`` (medium's sizes otherwise)."""
    return transformer.CONFIGS.get(config_name, transformer.CONFIGS["medium"])


def measure(
    kind: str,
    config_name: str,
    seconds: float,
    threads: int | None,
    pool: int,
    batch_size: int,
    seed: int = 0,
    demo_steps: int = DEMO["steps"],
) -> dict:
    """Train for ``seconds`` (after a warm-up) in this process; returns the figures of one line."""
    if kind == "cpu-notebook-demo":
        return measure_notebook_demo(demo_steps)
    if threads is not None:
        torch.set_num_threads(threads)
    config = CONFIGS[config_name]
    pairs, (src_size, tgt_size) = sentence_pool(pool, seed=seed)
    seed_everything(seed)
    device = torch.device("cuda" if kind.startswith("gpu") else "cpu")
    if kind.endswith("transformer"):
        sizes = transformer_config(config_name)
        model = transformer.build("transformer", sizes, src_size, tgt_size).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=sizes.lr_transformer, betas=(0.9, 0.98))
    else:
        model = build_model("attention", config, src_size, tgt_size).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    amp_dtype = torch.bfloat16 if device.type == "cuda" else None

    if kind == "cpu-per-sentence":
        order = torch.randperm(len(pairs), generator=torch.Generator().manual_seed(seed)).tolist()

        def steps():
            while True:
                for i in order:
                    source, target = pairs[i]
                    per_sentence_step(model, optimizer, source, target)
                    yield len(target), 1

        warmup = 5
    else:
        lengths = [len(s) for s, _ in pairs]

        def steps():
            epoch = 0
            while True:
                for indices in length_bucketed_batches(lengths, batch_size, seed=seed + epoch):
                    batch = make_batch([pairs[i] for i in indices])
                    train_step(model, batch, optimizer, PAD_ID, amp_dtype=amp_dtype, clip_norm=1.0)
                    yield int((batch["tgt_out"] != PAD_ID).sum()), len(indices)
                epoch += 1

        warmup = 10 if device.type == "cuda" else 3

    stepper = steps()
    for _ in range(warmup):
        next(stepper)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    rss_before = rss_mb()
    tokens = sentences = count = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        step_tokens, step_sentences = next(stepper)  # train_step returns loss.item(): synchronised
        tokens += step_tokens
        sentences += step_sentences
        count += 1
    elapsed, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    result = {
        "kind": kind,
        "config": config_name,
        "emb_dim": config.emb_dim,
        "hidden_dim": config.hidden_dim,
        "batch_size": 1 if kind == "cpu-per-sentence" else batch_size,
        "parameters": sum(p.numel() for p in model.parameters()),
        "threads": torch.get_num_threads(),
        "seconds": elapsed,
        "steps": count,
        "sentences": sentences,
        "tokens": tokens,
        "tokens_per_second": tokens / elapsed,
        "cpu_seconds": cpu_seconds,  # of this process, all its threads (CUDA: the host side only)
        "tokens_per_cpu_second": tokens / cpu_seconds,
        "rss_before_mb": rss_before,
        "peak_rss_mb": rss_mb(),
    }
    if device.type == "cuda":
        result["gpu"] = torch.cuda.get_device_name(device)
        result["gpu_peak_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
    return result


def run_worker(kind: str, args, batch_size: int) -> dict:
    """Run one measurement in a fresh Python process (its own peak memory and thread pool)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--seconds", str(args.seconds)]
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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
        "made_by": "python scripts/benchmark_training.py --threads 1 --out FILE",
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
