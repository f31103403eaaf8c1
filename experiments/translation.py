"""Train the toy English -> French models of chapters 05 and 06, with and without attention.

    python -m experiments.translation --config small|full [--model both|attention|plain]

trains on whatever ``pick_device`` finds (bf16 autocast on CUDA, float32 elsewhere) with a
fixed seed, a progress bar and a checkpoint after every epoch (run the same command again to
resume: it continues from the last checkpoint in ``--workdir``), then evaluates greedy
translations of the held-out test split by source length and writes, into ``--out``
(default ``attention_course/assets/``, the package data the chapters read):

- ``translation_results.json``: the configuration, training curves and, per model, exact-match
  accuracy and BLEU by source length (the table and figures of chapter 05);
- ``attention_model.pt``: the attention model's weights and vocabularies (a few MB);


    python -m experiments.translation --config maps --model attention

trains the model chapter 06 reads (``experiments.exports.MAPS_MODEL``) into ``experiments/maps_model/`` and then
writes chapter 06's data into ``--maps-out`` (default ``attention_course/assets/``): ``attention_maps.npz`` (maps,
translations, vocabularies) and ``attention_scorer.pt2`` (the model as a black-box scorer); see
:mod:`experiments.exports`.

    python -m experiments.translation --export-only

trains nothing: it rewrites chapter 06's data from the saved model (same as ``python -m experiments.exports``).

Several GPUs or machines: launch the same program with PyTorch's ``torchrun``, e.g.
``torchrun --nproc_per_node=4 -m experiments.translation --config full``; every process then
trains a DistributedDataParallel replica on its share of each epoch's batches (NCCL on CUDA,
gloo on CPU). Rank 0 writes every file.

Times: ``--config small`` about a minute on a 2-core CPU; the shipped files come from
``--config medium`` (about 8 to 10 minutes per model on a 2-core CPU, plus a minute of evaluation;
20 to 23 minutes on a loaded one); ``--config maps`` about 5 minutes; ``--config full`` is sized for
one GPU and has not been run yet.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from tqdm import tqdm

from attention_course.data import BOS_ID, EOS_ID, PAD_ID
from attention_course.toy_translation import build_vocabularies, encode_pairs, make_splits
from attention_course.translation import GRUEncoder, Seq2Seq, corpus_bleu
from autograder.reference.ch05_gpu_training import (
    AttentionDecoder,
    length_bucketed_batches,
    masked_cross_entropy,
    pad_batch,
    pick_device,
    train_step,
)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "attention_course" / "assets"  # the attention and plain models of chapter 05
MAPS_OUT = ROOT / "experiments" / "maps_model"  # --config maps: the model whose attention maps chapter 06 reads
LENGTH_BINS = [(1, 5), (6, 10), (11, 15), (16, 20), (21, 25), (26, 30), (31, 40)]


@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    num_train: int
    num_valid: int
    num_test: int
    emb_dim: int
    hidden_dim: int
    batch_size: int
    epochs: int
    lr: float
    seed: int = 0
    max_seconds: float | None = None  # stop training (and still evaluate) after this long
    bidirectional: bool = True  # False: the encoder reads left to right only
    score: str = "dot"  # attention score: "dot" (chapter 05's AttentionDecoder) or an experiments.variants name


CONFIGS = {
    # seconds, for tests
    "tiny": Config("tiny", 300, 50, 100, 16, 32, 32, 2, 3e-3),
    # the in-notebook run of chapter 05 (bounded to 50 s of training on a 2-core CPU)
    "small": Config("small", 6000, 300, 600, 32, 64, 64, 3, 3e-3, max_seconds=50.0),
    # the shipped results, trained on a 2-core CPU
    "medium": Config("medium", 30000, 1000, 3000, 64, 128, 64, 6, 3e-3),
    # chapter 06's model (experiments/maps_model/): medium's sizes, scaled dot-product score, a shorter run
    "maps": Config("maps", 12000, 500, 1000, 64, 128, 64, 3, 3e-3, score="scaled_dot"),
    # for a GPU
    "full": Config("full", 200000, 2000, 5000, 128, 256, 128, 15, 1e-3),
}


class PlainDecoder(nn.Module):
    """The same decoder without attention: every step sees the encoder's fixed summary ``c``
    (as input beside the previous word, and in place of the attention vector before the output
    layer), as in the RNN encoder-decoder of Cho et al. (2014). Same interface as
    ``AttentionDecoder``; returns ``(logits, None)``."""

    def __init__(self, vocab_size: int, emb_dim: int, hidden_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim)
        self.rnn = nn.GRU(emb_dim + hidden_dim, hidden_dim, batch_first=True)
        self.combine = nn.Linear(2 * hidden_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, vocab_size)

    def forward(self, tgt_in, hidden, enc_outputs, src_mask, context=None):
        embedded = self.embedding(tgt_in)
        summary = hidden if context is None else context
        context = summary.unsqueeze(1).expand(-1, tgt_in.shape[1], -1)
        states, last = self.rnn(torch.cat([embedded, context], dim=-1), hidden.unsqueeze(0))
        self.last_hidden = last[0]
        return self.out(torch.tanh(self.combine(torch.cat([context, states], dim=-1)))), None


def build_model(kind: str, config: Config, src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    encoder = GRUEncoder(src_vocab_size, config.emb_dim, config.hidden_dim, bidirectional=config.bidirectional)
    if kind == "attention" and config.score != "dot":
        from experiments.variants import VariantDecoder  # the same decoder with another score (chapter 04's)

        return Seq2Seq(encoder, VariantDecoder(config.score, tgt_vocab_size, config.emb_dim, config.hidden_dim))
    decoder_class = {"attention": AttentionDecoder, "plain": PlainDecoder}[kind]
    return Seq2Seq(encoder, decoder_class(tgt_vocab_size, config.emb_dim, config.hidden_dim))


def make_batch(pairs) -> dict:
    """Padded tensors for a list of ``(source ids, target ids)`` (both ending with EOS)."""
    src, lengths = pad_batch([s for s, _ in pairs], PAD_ID)
    tgt_in, _ = pad_batch([[BOS_ID] + t[:-1] for _, t in pairs], PAD_ID)
    tgt_out, _ = pad_batch([t for _, t in pairs], PAD_ID)
    return {"src": src, "lengths": lengths, "tgt_in": tgt_in, "tgt_out": tgt_out}


def load_data(config: Config):
    src_vocab, tgt_vocab = build_vocabularies()
    splits = make_splits(config.num_train, config.num_valid, config.num_test, seed=config.seed)
    encoded = {name: encode_pairs(pairs, src_vocab, tgt_vocab) for name, pairs in splits.items()}
    return src_vocab, tgt_vocab, splits, encoded


def progress_bar(total: int, label: str, enabled: bool = True) -> tqdm:
    """tqdm's bar on a terminal; nothing when ``enabled`` is False or stderr is not a terminal (CI, logs)."""
    return tqdm(total=total, desc=label, unit="batch", disable=None if enabled else True, dynamic_ncols=True)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@torch.no_grad()
def validation_loss(model, batches, device) -> float:
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        logits = model(batch["src"].to(device), batch["lengths"], batch["tgt_in"].to(device))
        real = int((batch["tgt_out"] != PAD_ID).sum())
        total += float(masked_cross_entropy(logits.float(), batch["tgt_out"].to(device), PAD_ID)) * real
        count += real
    model.train()
    return total / count


def train(
    kind: str,
    config: Config,
    encoded,
    device: torch.device,
    workdir: Path | None = None,
    max_seconds: float | None = None,
    show_progress: bool = True,
    log=print,
):
    """Train one model; returns ``(model, history)``. With ``workdir`` a checkpoint is written after
    every epoch and training resumes from it. Under ``torchrun`` the model is wrapped in
    DistributedDataParallel and each rank trains on every ``world_size``-th batch."""
    distributed = dist.is_available() and dist.is_initialized()
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    seed_everything(config.seed)
    src_vocab_size, tgt_vocab_size = encoded["vocab_sizes"]
    model = build_model(kind, config, src_vocab_size, tgt_vocab_size).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    history = {"epoch": [], "train_loss": [], "valid_loss": [], "seconds": [], "tokens": []}
    start_epoch, elapsed_before = 0, 0.0
    checkpoint = workdir / f"{kind}_{config.name}.ckpt" if workdir is not None else None
    if checkpoint is not None and checkpoint.exists():
        state = torch.load(checkpoint, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch, history, elapsed_before = state["epoch"], state["history"], state["elapsed"]
        log(f"resumed {kind} from {checkpoint} after epoch {start_epoch}")
    trained = model
    if distributed:
        trained = nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    amp_dtype = torch.bfloat16 if device.type == "cuda" else None
    train_pairs = encoded["train"]
    valid_batches = [
        make_batch([encoded["valid"][i] for i in b])
        for b in length_bucketed_batches([len(s) for s, _ in encoded["valid"]], 256, shuffle=False)
    ]
    budget = max_seconds if max_seconds is not None else config.max_seconds
    started = time.perf_counter() - elapsed_before
    for epoch in range(start_epoch, config.epochs):
        batches = length_bucketed_batches([len(s) for s, _ in train_pairs], config.batch_size, seed=config.seed + epoch)
        per_rank = len(batches) // world  # the same number of steps on every rank
        batches = batches[rank::world][:per_rank]
        progress = progress_bar(
            len(batches), f"{kind} epoch {epoch + 1}/{config.epochs}", enabled=show_progress and rank == 0
        )
        losses, tokens, out_of_time, epoch_started = [], 0, False, time.perf_counter()
        for step, indices in enumerate(batches):
            batch = make_batch([train_pairs[i] for i in indices])
            losses.append(train_step(trained, batch, optimizer, PAD_ID, amp_dtype=amp_dtype, clip_norm=1.0))
            tokens += int(batch["lengths"].sum()) + int((batch["tgt_out"] != PAD_ID).sum())
            progress.update(1)
            if step % 10 == 0 or step == len(batches) - 1:
                progress.set_postfix(
                    loss=f"{np.mean(losses[-50:]):.3g}",
                    tok_per_s=f"{tokens / max(time.perf_counter() - epoch_started, 1e-9):.0f}",
                )
            if budget is not None and time.perf_counter() - started > budget:
                out_of_time = True
                break
        progress.close()
        history["epoch"].append(epoch + 1 if not out_of_time else epoch + (step + 1) / len(batches))
        history["train_loss"].append(float(np.mean(losses)))
        history["valid_loss"].append(validation_loss(model, valid_batches, device))
        history["seconds"].append(time.perf_counter() - started)
        history["tokens"].append(tokens * world)
        log(
            f"{kind} epoch {history['epoch'][-1]:.2f}: train loss {history['train_loss'][-1]:.4f}, "
            f"valid loss {history['valid_loss'][-1]:.4f}, {history['seconds'][-1]:.0f} s"
        )
        if checkpoint is not None and rank == 0 and not out_of_time:
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            torch.save(
                {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "epoch": epoch + 1,
                    "history": history,
                    "elapsed": time.perf_counter() - started,
                    "config": dataclasses.asdict(config),
                },
                checkpoint,
            )
        if out_of_time:
            log(f"{kind}: stopped after {budget:.0f} s of training (time budget)")
            break
    return model, history


def length_bin(length: int) -> str:
    for low, high in LENGTH_BINS:
        if low <= length <= high:
            return f"{low}-{high}"
    return f">{LENGTH_BINS[-1][1]}"


@torch.no_grad()
def fast_greedy(model: Seq2Seq, src, lengths, max_len: int):
    """Greedy decoding one step at a time, carrying the decoder's state (``greedy_translate`` of the
    package re-reads the prefix at every step, which is too slow for a whole test split). Each step
    calls the decoder's own ``forward`` on one token; the new state comes from its ``rnn``."""
    model.eval()
    outputs, summary = model.encoder(src, lengths)
    mask = model.source_mask(src, lengths)
    decoder, hidden = model.decoder, summary
    y = torch.full((src.shape[0],), BOS_ID, dtype=torch.long, device=src.device)
    done = torch.zeros_like(y, dtype=torch.bool)
    produced = []
    for _ in range(max_len):
        if isinstance(decoder, PlainDecoder):
            logits, _ = decoder(y[:, None], hidden, outputs, mask, context=summary)
            hidden = decoder.last_hidden
        else:
            logits, _ = decoder(y[:, None], hidden, outputs, mask)
            hidden = decoder.rnn(decoder.embedding(y[:, None]), hidden.unsqueeze(0))[1][0]
        y = torch.where(done, torch.full_like(y, PAD_ID), logits[:, -1].argmax(-1))
        produced.append(y)
        done |= y == EOS_ID
        if bool(done.all()):
            break
    return torch.stack(produced, dim=1)


@torch.no_grad()
def evaluate(model, pairs, encoded_pairs, tgt_vocab, device, batch_size: int = 250, decode=None) -> dict:
    """Greedy translations of ``pairs`` scored by source length (in words, without EOS):
    exact-match accuracy and BLEU per length bin, and overall. ``decode(model, src, lengths, max_len)``
    returns the greedy tokens ``(B, L)``; :func:`fast_greedy` by default (another model family, e.g. the
    Transformer of ``experiments.transformer``, passes its own)."""
    order = length_bucketed_batches([len(s) for s, _ in encoded_pairs], batch_size, shuffle=False)
    hypotheses = [None] * len(pairs)
    for indices in order:
        batch = make_batch([encoded_pairs[i] for i in indices])
        max_len = int(batch["tgt_out"].shape[1]) + 10
        tokens = (decode or fast_greedy)(model, batch["src"].to(device), batch["lengths"], max_len=max_len)
        for row, i in enumerate(indices):
            hypotheses[i] = tgt_vocab.decode(tokens[row].tolist())
    references = [french.split() for _, french in pairs]
    lengths = [len(english.split()) for english, _ in pairs]
    table = {}
    for low, high in LENGTH_BINS:
        chosen = [i for i, n in enumerate(lengths) if low <= n <= high]
        if chosen:
            table[f"{low}-{high}"] = {
                "count": len(chosen),
                "exact_match": sum(hypotheses[i] == references[i] for i in chosen) / len(chosen),
                "bleu": corpus_bleu([hypotheses[i] for i in chosen], [references[i] for i in chosen]),
            }
    return {
        "by_length": table,
        "exact_match": sum(h == r for h, r in zip(hypotheses, references)) / len(references),
        "bleu": corpus_bleu(hypotheses, references),
        "examples": [
            {"source": pairs[i][0], "reference": pairs[i][1], "output": " ".join(hypotheses[i])}
            for i in range(min(5, len(pairs)))
        ],
    }


def run(
    config: Config,
    models=("attention", "plain"),
    device=None,
    workdir: Path | None = None,
    out: Path | None = None,
    maps_out: Path | None = None,
    max_seconds: float | None = None,
    show_progress: bool = True,
    dump_params: Path | None = None,
    log=print,
) -> dict:
    """Train and evaluate ``models``; write the results (rank 0 only) when ``out`` is given."""
    device = pick_device(device)
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
    rank = dist.get_rank() if distributed else 0
    t0 = time.perf_counter()
    src_vocab, tgt_vocab, splits, encoded = load_data(config)
    encoded["vocab_sizes"] = (len(src_vocab), len(tgt_vocab))
    log(
        f"data: {len(splits['train'])} train / {len(splits['valid'])} valid / {len(splits['test'])} test pairs, "
        f"vocabularies {len(src_vocab)} / {len(tgt_vocab)} ({time.perf_counter() - t0:.1f} s); device {device}, "
        f"world size {dist.get_world_size() if distributed else 1}"
    )
    results = {
        "config": dataclasses.asdict(config),
        "device": str(device),
        "torch": torch.__version__,
        "world_size": dist.get_world_size() if distributed else 1,
        "models": {},
    }
    for kind in models:
        model, history = train(
            kind,
            config,
            encoded,
            device,
            workdir=workdir,
            max_seconds=max_seconds,
            show_progress=show_progress,
            log=log,
        )
        if dump_params is not None:
            torch.save(
                {k: v.detach().cpu() for k, v in model.state_dict().items()},
                dump_params.parent / f"{dump_params.name}.{kind}.rank{rank}.pt",
            )
        if rank != 0:
            continue
        evaluation = evaluate(model, splits["test"], encoded["test"], tgt_vocab, device)
        results["models"][kind] = {
            "history": history,
            "parameters": sum(p.numel() for p in model.parameters()),
            **evaluation,
        }
        log(f"{kind}: test exact match {evaluation['exact_match']:.3f}, BLEU {evaluation['bleu']:.1f}")
        if out is not None and kind == "attention":
            out.mkdir(parents=True, exist_ok=True)
            torch.save(
                {
                    "model": {k: v.cpu() for k, v in model.state_dict().items()},
                    "config": dataclasses.asdict(config),
                    "source_vocab": src_vocab.itos,
                    "target_vocab": tgt_vocab.itos,
                },
                out / "attention_model.pt",
            )
            if maps_out is not None:
                from experiments.exports import export_attention_maps

                export_attention_maps(out / "attention_model.pt", maps_out, log=log)
    if out is not None and rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "translation_results.json"
        if path.exists():  # keep the other model's results of the same configuration
            previous = json.loads(path.read_text())
            if previous.get("config") == results["config"]:
                results["models"] = {**previous["models"], **results["models"]}
        path.write_text(json.dumps(results, indent=1) + "\n")
        log(f"wrote {out / 'translation_results.json'}")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.translation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", choices=sorted(CONFIGS), default="small")
    parser.add_argument("--model", choices=["both", "attention", "plain"], default="both")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: what pick_device finds)")
    parser.add_argument(
        "--workdir", type=Path, default=ROOT / "_build" / "translation", help="checkpoints (resumed when present)"
    )
    parser.add_argument("--fresh", action="store_true", help="ignore existing checkpoints")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where the results and the attention model go (default: attention_course/assets; "
        "experiments/maps_model for --config maps)",
    )
    parser.add_argument(
        "--maps-out", type=Path, default=ROOT / "attention_course" / "assets", help="where chapter 06's data goes"
    )
    parser.add_argument("--no-write", action="store_true", help="write no results (a dry run)")
    parser.add_argument("--max-seconds", type=float, default=None, help="stop training each model after this long")
    parser.add_argument(
        "--dump-params",
        type=Path,
        default=None,
        help="every rank saves its final parameters to DUMP.<model>.rank<r>.pt (for tests)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--export-only",
        action="store_true",
        help="train nothing: write chapter 06's data from the model it reads (python -m experiments.exports)",
    )
    args = parser.parse_args(argv)
    from experiments.exports import MAPS_MODEL, export_attention_maps

    if args.export_only:
        export_attention_maps(MAPS_MODEL, args.maps_out)
        return 0
    config = CONFIGS[args.config]
    out = args.out or (MAPS_OUT if config.name == "maps" else DEFAULT_OUT)
    workdir = args.workdir / f"seed{config.seed}"
    if args.fresh and workdir.exists():
        for path in workdir.glob(f"*_{config.name}.ckpt"):
            path.unlink()
    models = ("attention", "plain") if args.model == "both" else (args.model,)
    run(
        config,
        models,
        device=args.device,
        workdir=workdir,
        out=None if args.no_write else out,
        maps_out=args.maps_out if not args.no_write and out / "attention_model.pt" == MAPS_MODEL else None,
        max_seconds=args.max_seconds,
        show_progress=not args.quiet,
        dump_params=args.dump_params,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
