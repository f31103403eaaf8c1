"""How chapter 09's image classifiers are trained and scored: one loop for every model and task.

:func:`train_classifier` runs a fixed number of AdamW updates (a budget in steps, never in seconds, so a run gives
the same model on any machine of the same instruction set), the learning rate warming up linearly over the first
5% of the steps and then decaying along a cosine to 0, the gradients' norm clipped at 1; it records the training
loss (the mean over each evaluation interval) and what ``evaluate`` says at every ``eval_every`` steps, and the
seconds per update. :func:`accuracy` scores a model on a fixed set of images.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F


def lr_factor(step: int, steps: int, warmup_fraction: float = 0.05) -> float:
    """The learning rate's multiplier at update ``step`` (0-based) of ``steps``: linear warm-up, then a cosine."""
    warmup = max(1, int(steps * warmup_fraction))
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


@torch.no_grad()
def accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, batch_size: int = 500) -> float:
    """The fraction of ``images`` (n, C, H, W) whose argmax logit is their label (n,); eval mode, then restored."""
    was_training = model.training
    model.eval()
    correct = 0
    for start in range(0, len(images), batch_size):
        logits = model(images[start : start + batch_size])
        correct += int((logits.argmax(dim=-1) == labels[start : start + batch_size]).sum())
    model.train(was_training)
    return correct / len(images)


def train_classifier(
    model: nn.Module,
    batch: Callable[[int], tuple[torch.Tensor, torch.Tensor]],
    steps: int,
    lr: float,
    weight_decay: float = 0.01,
    eval_every: int = 100,
    evaluate: Callable[[nn.Module], dict] | None = None,
    log: Callable[[str], None] | None = None,
) -> dict:
    """Train ``model`` for ``steps`` updates on ``batch(step)`` -> ``(images, labels)``.

    Returns the history: ``steps`` (the update counts at which it was recorded), ``train_loss`` (the mean
    cross-entropy over the updates since the last record), one list per key of ``evaluate(model)``, and
    ``seconds_per_step`` (the training updates only, evaluations excluded).
    """
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, steps))
    history: dict = {"steps": [], "train_loss": []}
    running, count, seconds = 0.0, 0, 0.0
    model.train()
    for step in range(steps):
        images, labels = batch(step)
        started = time.perf_counter()
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        seconds += time.perf_counter() - started
        running, count = running + loss.item(), count + 1
        if (step + 1) % eval_every == 0 or step + 1 == steps:
            history["steps"].append(step + 1)
            history["train_loss"].append(running / count)
            running, count = 0.0, 0
            for key, value in (evaluate(model) if evaluate else {}).items():
                history.setdefault(key, []).append(value)
            if log:
                log(f"  step {step + 1}: " + ", ".join(f"{k} {v[-1]:.4f}" for k, v in history.items() if k != "steps"))
    model.eval()
    history["seconds_per_step"] = seconds / steps
    return history
