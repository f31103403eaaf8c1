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
   under bfloat16 autocast, as the training programs train there.

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
                                                   [--batch-sizes 64 256 512]

``--threads`` sets PyTorch's CPU threads for every line (default: PyTorch's own default, usually
one per core).

How long: about ``7 x (--seconds + 10 s)`` on a CPU-only machine (the 10 s start each process:
importing PyTorch, generating the sentences, warming up), so about three minutes with the default
15 s, and 6 more lines with CUDA. This is a benchmark, not a test: the figures depend on the machine
and on whatever else runs on it, so on a shared machine repeat it (and try ``--threads 1``) before
trusting an absolute number.
"""

from __future__ import annotations

import argparse
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
from attention_course.toy_translation import build_vocabularies, encode_pairs, generate_pairs  # noqa: E402
from autograder.reference.ch05_gpu_training import length_bucketed_batches, train_step  # noqa: E402
from experiments import transformer  # noqa: E402
from experiments.config import CONFIGS  # noqa: E402
from experiments.data import make_batch  # noqa: E402
from experiments.models import build_model  # noqa: E402
from experiments.training import seed_everything  # noqa: E402

TARGET_RATIO = 50.0
KINDS = ("cpu-batched", "cpu-per-sentence", "cpu-transformer", "gpu-batched", "gpu-transformer")
LABELS = {
    "cpu-batched": "batched, CPU",
    "cpu-per-sentence": "per-sentence loop, CPU",
    "cpu-transformer": "Transformer, CPU",
    "gpu-batched": "batched, GPU",
    "gpu-transformer": "Transformer, GPU",
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


def transformer_config(config_name: str) -> transformer.Config:
    """The Transformer of ``experiments.transformer`` sized for ``config_name`` (medium's sizes otherwise)."""
    return transformer.CONFIGS.get(config_name, transformer.CONFIGS["medium"])


def measure(
    kind: str, config_name: str, seconds: float, threads: int | None, pool: int, batch_size: int, seed: int = 0
) -> dict:
    """Train for ``seconds`` (after a warm-up) in this process; returns the figures of one line."""
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
    env = dict(os.environ)
    if args.threads is not None:
        command += ["--threads", str(args.threads)]
        env["OMP_NUM_THREADS"] = str(args.threads)
    completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if completed.returncode != 0:
        raise SystemExit(f"the {kind} measurement failed:\n{completed.stdout}\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def describe(result: dict) -> str:
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
    parser.add_argument("--worker", choices=KINDS, help=argparse.SUPPRESS)  # internal: one measurement
    args = parser.parse_args(argv)
    if args.worker is not None:
        batch_size = args.batch_sizes[0] if args.batch_sizes else CONFIGS[args.config].batch_size
        print(json.dumps(measure(args.worker, args.config, args.seconds, args.threads, args.pool, batch_size)))
        return 0

    config = CONFIGS[args.config]
    sizes = transformer_config(args.config)
    batch_sizes = args.batch_sizes or sorted({config.batch_size, 256, 512})
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
