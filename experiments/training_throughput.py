"""One line of the training benchmark (:mod:`experiments.benchmark_training`), measured in this process.

:func:`measure` trains one kind of line (:data:`KINDS`: the batched trainer, the per-sentence loop or the
Transformer, on the CPU or the GPU, or chapter 05's notebook demo) for a number of seconds after a warm-up
and returns its figures: target tokens per second of wall-clock and of CPU time, and peak memory. The
per-sentence loop is PyTorch's classic translation tutorial's (:func:`per_sentence_step`: one sentence per
update, the decoder stepped token by token in Python); :func:`measure_notebook_demo` times chapter 05's
in-notebook training run, whose sizes :data:`DEMO` holds (a test keeps them equal to the notebook cell's).
The benchmark runs each line in a fresh process (``python -m experiments.benchmark_training --worker KIND``).
"""

from __future__ import annotations

import resource
import sys
import time

import torch
import torch.nn.functional as F

from attention_course.data import BOS_ID, PAD_ID
from attention_course.toy_translation import build_vocabularies, encode_pairs, generate_pairs, make_splits
from attention_course.translation import GRUEncoder, Seq2Seq
from autograder.reference.ch05_gpu_training import (
    AttentionDecoder,
    length_bucketed_batches,
    masked_cross_entropy,
    pad_batch,
    train_step,
)
from experiments import transformer
from experiments.config import CONFIGS
from experiments.data import make_batch
from experiments.models import build_model
from experiments.training import seed_everything

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
