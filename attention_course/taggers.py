"""A small recurrent tagger, for the experiment of chapter 01 (not an exercise).

A *tagger* reads a sequence left to right and emits one prediction per input position, at
the moment it reads that position: ``y_t = softmax(W h_t + c)`` with ``h_t`` the state of a
one-layer recurrent network. The chapter trains it on two tasks with sequences of one fixed
length, copying (output ``t`` is input ``t``) and reversing (output ``t`` is input
``T - 1 - t``), and compares the accuracy at each output position.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

Pairs = Sequence[tuple[Sequence[int], Sequence[int]]]


class RecurrentTagger(nn.Module):
    """Embedding, one recurrent layer (``"gru"`` or ``"rnn"``, i.e. Elman's tanh RNN), linear read-out.

    ``forward(tokens)`` maps ``(B, T)`` long token ids to logits ``(B, T, V)``: the logits at
    position ``t`` depend on ``tokens[:, :t + 1]`` only.
    """

    def __init__(self, vocab_size: int, emb_dim: int = 16, hidden_dim: int = 64, cell: str = "gru"):
        super().__init__()
        layers = {"gru": nn.GRU, "rnn": nn.RNN}
        if cell not in layers:
            raise ValueError(f"cell must be one of {sorted(layers)}, got {cell!r}")
        self.embedding = nn.Embedding(vocab_size, emb_dim)
        self.rnn = layers[cell](emb_dim, hidden_dim, batch_first=True)
        self.out = nn.Linear(hidden_dim, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        states, _ = self.rnn(self.embedding(tokens))
        return self.out(states)


def equal_length_tensors(pairs: Pairs) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sources (N, T), targets (N, T))`` long tensors from pairs whose sequences all have length ``T``."""
    lengths = {len(seq) for pair in pairs for seq in pair}
    if len(lengths) != 1:
        raise ValueError(f"a 1:1 tagger needs sources and targets of one common length, got lengths {sorted(lengths)}")
    sources = torch.tensor([list(src) for src, _ in pairs], dtype=torch.long)
    targets = torch.tensor([list(tgt) for _, tgt in pairs], dtype=torch.long)
    return sources, targets


def train_tagger(
    pairs: Pairs,
    vocab_size: int,
    steps: int = 600,
    batch_size: int = 64,
    lr: float = 1e-2,
    emb_dim: int = 16,
    hidden_dim: int = 64,
    cell: str = "gru",
    seed: int = 0,
    num_threads: int | None = 1,
) -> tuple[RecurrentTagger, list[float]]:
    """Train a :class:`RecurrentTagger` with Adam on random mini-batches of ``pairs``.

    The loss is the mean cross-entropy over every position. Returns the trained model (in
    eval mode) and the loss of each step. Deterministic for a given ``seed`` on one machine;
    PyTorch's global random state is left as it was.

    ``num_threads``: PyTorch's intra-op threads while training (restored afterwards; ``None``
    keeps the current setting). Models this small train fastest on one thread, and far
    faster than on several when other processes share the CPU.
    """
    sources, targets = equal_length_tensors(pairs)
    saved_threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = RecurrentTagger(vocab_size, emb_dim, hidden_dim, cell)
            batches = torch.randint(len(sources), (steps, batch_size))
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        losses = []
        for batch in batches:
            logits = model(sources[batch])
            loss = nn.functional.cross_entropy(logits.reshape(-1, vocab_size), targets[batch].reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    finally:
        torch.set_num_threads(saved_threads)
    return model.eval(), losses


def per_position_accuracy(model: nn.Module, pairs: Pairs) -> np.ndarray:
    """``(T,)`` array: the fraction of ``pairs`` whose target token at position ``t`` the model's argmax hits."""
    sources, targets = equal_length_tensors(pairs)
    with torch.no_grad():
        predictions = model(sources).argmax(dim=-1)
    return (predictions == targets).double().mean(dim=0).numpy()
