"""Training: the loops of the programs and what they share (seeds, progress bars, precision, validation loss,
the set-up of several processes under ``torchrun``).

- :func:`train`: chapter 05's models by epochs, with a checkpoint after every epoch (resumed when present) and
  DistributedDataParallel under ``torchrun`` (``experiments.translation``);
- :func:`train_updates`: a fixed number of updates (``experiments.variants``, every variant the same);
- :func:`train_steps`: given batches under a learning-rate schedule, with validation points
  (``experiments.transformer``, both models on the same batches).

Every step is chapter 05's ``train_step`` (reference implementation): masked cross-entropy, gradient clipping at
1.0, bf16 autocast on CUDA (:func:`autocast_dtype`). Under ``torchrun`` the replicas' gradients are combined by
:func:`token_weighted_ddp`, so that a step is the step of the per-token mean over the union of their batches.
"""

from __future__ import annotations

import dataclasses
import os
import random
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from tqdm import tqdm

from attention_course.data import PAD_ID
from autograder.reference.ch05_gpu_training import length_bucketed_batches, masked_cross_entropy, train_step
from experiments.config import Config
from experiments.data import fixed_batches, make_batch
from experiments.models import build_model


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def autocast_dtype(device: torch.device):
    """The precision of the forward passes: bf16 autocast on CUDA, None (float32) elsewhere."""
    return torch.bfloat16 if device.type == "cuda" else None


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA), so that a timer reads the time the work took."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def progress_bar(total: int, label: str, enabled: bool = True) -> tqdm:
    """tqdm's bar on a terminal; nothing when ``enabled`` is False or stderr is not a terminal (CI, logs)."""
    return tqdm(total=total, desc=label, unit="batch", disable=None if enabled else True, dynamic_ncols=True)


def start_distributed(device: torch.device):
    """Join the process group when started by ``torchrun`` (``WORLD_SIZE`` > 1): NCCL on CUDA (each process on
    the GPU ``LOCAL_RANK``), gloo on the CPU. Returns ``(device, distributed, rank, world_size)``."""
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if not distributed:
        return device, False, 0, 1
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
    return device, True, dist.get_rank(), dist.get_world_size()


class TokenShare:
    """The state of :func:`token_weighted_allreduce`: this replica's share ``n_r / N`` of the step's real target
    tokens (``n_r`` its own, ``N`` those of all replicas)."""

    def __init__(self, group=None):
        self.group = group
        self.share = 1.0

    def set_tokens(self, tokens: int, device: torch.device) -> None:
        """Before each step: add up the replicas' counts of real target tokens (one small all-reduce)."""
        total = torch.tensor([float(tokens)], device=device)
        dist.all_reduce(total, group=self.group)
        self.share = tokens / float(total)


def token_weighted_allreduce(state, bucket):
    """A DDP communication hook: each replica's gradients times its share of the tokens, summed over the replicas.
    ``state`` is a :class:`TokenShare`, ``bucket`` a ``dist.GradBucket``; returns a ``torch.futures.Future`` of the
    bucket's new gradients (no annotations: DDP checks them, and this module's are strings).

    Replica ``r``'s loss is the mean over its ``n_r`` real target tokens, so its gradient is ``grad(S_r) / n_r``
    (``S_r`` the sum of its tokens' losses). DDP's default hook averages: ``(1/R) sum_r grad(S_r) / n_r``, which is
    the gradient of the per-token mean over the union of the batches, ``grad(sum_r S_r) / N``, only when every
    ``n_r`` is the same. Weighting by ``n_r / N`` before summing gives that gradient for any counts."""
    buffer = bucket.buffer()
    buffer.mul_(state.share)
    work = dist.all_reduce(buffer, group=state.group, async_op=True)
    return work.get_future().then(lambda future: future.value()[0])


def token_weighted_ddp(model: nn.Module, device: torch.device):
    """``model`` wrapped in DistributedDataParallel with :func:`token_weighted_allreduce` in place of DDP's averaging.
    Returns ``(wrapped, share)``: call ``share.set_tokens(real target tokens of this replica's batch, device)``
    before every step."""
    wrapped = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    share = TokenShare()
    wrapped.register_comm_hook(share, token_weighted_allreduce)
    return wrapped, share


def stop_distributed() -> None:
    """Wait for every process, then leave the process group (the end of :func:`start_distributed`)."""
    dist.barrier()
    dist.destroy_process_group()


@torch.no_grad()
def validation_loss(model, batches, device) -> float:
    """Mean cross-entropy per real target token over ``batches`` (:func:`experiments.data.make_batch`'s dicts)."""
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
    """Train one of chapter 05's models (``kind``: ``attention`` or ``plain``) for ``config.epochs`` epochs;
    returns ``(model, history)``. With ``workdir`` a checkpoint is written after every epoch and training
    resumes from it. Under ``torchrun`` the model is wrapped in DistributedDataParallel (:func:`token_weighted_ddp`)
    and each rank trains on every ``world_size``-th batch."""
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
    trained, share = model, None
    if distributed:
        trained, share = token_weighted_ddp(model, device)
    amp_dtype = autocast_dtype(device)
    train_pairs = encoded["train"]
    valid_batches = fixed_batches(encoded["valid"])
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
            if share is not None:
                share.set_tokens(int((batch["tgt_out"] != PAD_ID).sum()), device)
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


def train_updates(
    model, config: Config, updates: int, encoded, device, amp_dtype=None, max_seconds=None, label="", show_progress=True
) -> dict:
    """Train ``model`` for ``updates`` steps (fewer if ``max_seconds`` runs out) on length-bucketed batches of
    ``config.batch_size``, reshuffled every epoch, with Adam at ``config.lr``; returns the figures: the training
    loss (mean of the last 50 steps), the number of updates and epochs, the seconds and the target tokens/s."""
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    train_pairs = encoded["train"]
    lengths = [len(s) for s, _ in train_pairs]
    progress = progress_bar(updates, label, enabled=show_progress)
    losses, target_tokens, step, epoch = [], 0, 0, 0
    synchronize(device)
    started = time.perf_counter()
    while step < updates:
        for indices in length_bucketed_batches(lengths, config.batch_size, seed=config.seed + epoch):
            batch = make_batch([train_pairs[i] for i in indices])
            losses.append(train_step(model, batch, optimizer, PAD_ID, amp_dtype=amp_dtype, clip_norm=1.0))
            target_tokens += int((batch["tgt_out"] != PAD_ID).sum())
            step += 1
            progress.update(1)
            if step % 20 == 0 or step == updates:
                progress.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3g}")
            if step >= updates or (max_seconds is not None and time.perf_counter() - started > max_seconds):
                break
        epoch += 1
        if max_seconds is not None and time.perf_counter() - started > max_seconds:
            break
    synchronize(device)
    seconds = time.perf_counter() - started
    progress.close()
    last = losses[-50:]
    return {
        "updates": step,
        "epochs": step * config.batch_size / len(train_pairs),
        "train_loss": sum(last) / len(last),
        "train_seconds": seconds,
        "target_tokens_per_second": target_tokens / seconds,
    }


def batch_schedule(train_lengths, steps: int, batch_size: int, seed: int) -> list[list[int]]:
    """``steps`` batches of indices: length-bucketed epochs of ``batch_size``, reshuffled every epoch."""
    batches, epoch = [], 0
    while len(batches) < steps:
        batches += length_bucketed_batches(train_lengths, batch_size, seed=seed + epoch)
        epoch += 1
    return batches[:steps]


def warmup_decay_lr(peak: float, step: int, warmup: int, steps: int) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to 10 % of ``peak`` at the last of ``steps``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(steps - warmup, 1)
    return peak * (1.0 - 0.9 * min(progress, 1.0))


def train_steps(
    model,
    batches,
    encoded,
    device,
    peak_lr: float,
    warmup: int,
    name: str,
    label: str,
    max_seconds: float | None = None,
    show_progress: bool = True,
    log=print,
):
    """Train ``model`` on ``batches`` (lists of indices into ``encoded["train"]``), one step each, with Adam
    (betas 0.9, 0.98) under :func:`warmup_decay_lr`; the validation loss at 8 points. Returns ``(history,
    figures)``: ``figures`` holds the timing (training seconds without validation, CPU seconds, steps, target
    tokens per second) and the final losses. ``max_seconds`` bounds the training seconds."""
    steps = len(batches)
    optimizer = torch.optim.Adam(model.parameters(), lr=warmup_decay_lr(peak_lr, 0, warmup, steps), betas=(0.9, 0.98))
    amp_dtype = autocast_dtype(device)
    train_pairs = encoded["train"]
    valid_batches = fixed_batches(encoded["valid"])
    every = max(1, steps // 8)  # validation points
    history = {"step": [], "train_loss": [], "valid_loss": [], "seconds": []}
    progress = progress_bar(steps, label, enabled=show_progress)
    losses, tokens, train_seconds, cpu_seconds, step = [], 0, 0.0, 0.0, 0
    for step, indices in enumerate(batches):
        started, cpu_started = time.perf_counter(), time.process_time()
        for group in optimizer.param_groups:
            group["lr"] = warmup_decay_lr(peak_lr, step, warmup, steps)
        batch = make_batch([train_pairs[i] for i in indices])
        losses.append(train_step(model, batch, optimizer, PAD_ID, amp_dtype=amp_dtype, clip_norm=1.0))
        train_seconds += time.perf_counter() - started  # train_step ends with loss.item(): synchronised
        cpu_seconds += time.process_time() - cpu_started
        tokens += int((batch["tgt_out"] != PAD_ID).sum())
        out_of_time = max_seconds is not None and train_seconds > max_seconds
        if (step + 1) % every == 0 or step == steps - 1 or out_of_time:
            history["step"].append(step + 1)
            history["train_loss"].append(float(np.mean(losses[-every:])))
            history["valid_loss"].append(validation_loss(model, valid_batches, device))
            history["seconds"].append(train_seconds)
        progress.update(1)
        if step % 10 == 0 or step == steps - 1:
            progress.set_postfix(loss=f"{np.mean(losses[-50:]):.3g}", tok_per_s=f"{tokens / train_seconds:.0f}")
        if out_of_time:
            log(f"{name}: stopped after {train_seconds:.0f} s of training (time budget), step {step + 1}")
            break
    progress.close()
    figures = {
        "steps": step + 1,
        "train_seconds": train_seconds,
        "train_cpu_seconds": cpu_seconds,  # CPU time of this process (all its threads) while training
        "target_tokens": tokens,
        "target_tokens_per_second": tokens / train_seconds,
        "target_tokens_per_cpu_second": tokens / cpu_seconds,  # less sensitive to other work on a shared machine
        "final_train_loss": history["train_loss"][-1],
        "final_valid_loss": history["valid_loss"][-1],
    }
    return history, figures
