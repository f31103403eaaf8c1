"""Reference implementations for 06_attention_maps.

GENERATED from solutions/06_attention_maps/06_attention_maps.ipynb by `python -m autograder generate`: the cells tagged
"export" and every autograded-answer cell, in order, without the solution markers.
Do not edit: edit the notebook and regenerate.
"""
import matplotlib.pyplot as plt
import numpy as np
import torch


def plot_attention(weights, src_tokens, tgt_tokens, ax=None):
    """Draw an attention map and return the matplotlib Axes.

    weights    : (T, S) array or tensor, row t = the attention weights of target token t over the source.
    src_tokens : S strings, the labels of the columns (x axis).
    tgt_tokens : T strings, the labels of the rows (y axis), the first target token at the top.
    ax         : an Axes to draw into, or None to create a new figure.
    Draws one image of the weights with the "viridis" colour map and a colour bar.
    """
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    weights = np.asarray(weights, dtype=float)
    if ax is None:
        _, ax = plt.subplots(figsize=(0.45 * weights.shape[1] + 2.0, 0.4 * weights.shape[0] + 1.5))
    image = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")  # row 0 at the top
    ax.set_xticks(range(len(src_tokens)), labels=list(src_tokens), rotation=90)
    ax.set_yticks(range(len(tgt_tokens)), labels=list(tgt_tokens))
    ax.set_xlabel("source (English)")
    ax.set_ylabel("output (French)")
    ax.figure.colorbar(image, ax=ax, label="attention weight")
    return ax


def argmax_alignment(weights):
    """The most-attended source position of every target token.

    weights : (T, S) array (or tensor) of attention weights, one row per target token.
    Returns an int NumPy array of shape (T,) whose entry t is the column of the largest weight in row t.
    """
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    return np.asarray(weights).argmax(axis=1).astype(int)


def crossing_count(alignment):
    """How far an alignment is from monotonic: the number of crossing pairs.

    alignment : sequence of T source positions (ints), e.g. the output of argmax_alignment.
    Returns an int: the number of pairs i < j with alignment[i] > alignment[j] (equal positions do not cross).
    """
    a = np.asarray(alignment)
    return int(np.triu(a[:, None] > a[None, :], k=1).sum())


def attention_entropy(weights):
    """The entropy (in nats) of each row of an attention map.

    weights : (T, S) array (or tensor) whose rows are probability distributions.
    Returns a float NumPy array of shape (T,): H_t = -sum_i w_ti log w_ti, with 0 log 0 = 0.
    """
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    p = np.asarray(weights, dtype=float)
    safe = np.where(p > 0, p, 1.0)            # log 1 = 0 where p = 0, so those terms vanish
    return -(p * np.log(safe)).sum(axis=1)
