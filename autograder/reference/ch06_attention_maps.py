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

    weights    : (T_dec, T_enc) array or tensor, row t = the attention weights of target token t over the source.
    src_tokens : T_enc strings, the labels of the columns (x axis).
    tgt_tokens : T_dec strings, the labels of the rows (y axis), the first target token at the top.
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

    weights : (T_dec, T_enc) array (or tensor) of attention weights, one row per target token.
    Returns an int NumPy array of shape (T_dec,) whose entry t is the column of the largest weight in row t.
    """
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    return np.asarray(weights).argmax(axis=1).astype(int)


def crossing_count(alignment):
    """How far an alignment is from monotonic: the number of crossing pairs.

    alignment : sequence of T_dec source positions (ints), e.g. the output of argmax_alignment.
    Returns an int: the number of pairs i < j with alignment[i] > alignment[j] (equal positions do not cross).
    """
    a = np.asarray(alignment)
    return int(np.triu(a[:, None] > a[None, :], k=1).sum())


def attention_entropy(weights):
    """The entropy (in nats) of each row of an attention map.

    weights : (T_dec, T_enc) array (or tensor) whose rows are probability distributions.
    Returns a float NumPy array of shape (T_dec,): H_t = -sum_i w_ti log w_ti, with 0 log 0 = 0.
    """
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    p = np.asarray(weights, dtype=float)
    safe = np.where(p > 0, p, 1.0)            # log 1 = 0 where p = 0, so those terms vanish
    return -(p * np.log(safe)).sum(axis=1)


def occlusion_importance(score_fn, src_ids, replace_id):
    """Importance of every source token for every target token, by occlusion.

    score_fn   : function from a 1-D long tensor of T_enc source ids to a 1-D tensor (T_dec,), the
                 log-probability of each (fixed) target token given that source.
    src_ids    : T_enc source ids, a list of ints or a 1-D long tensor (not modified).
    replace_id : the id that hides a source token (e.g. the padding id).
    Returns a float NumPy array (T_dec, T_enc): entry [t, i] = score_fn(src_ids)[t] - score_fn(src_ids with
    position i replaced by replace_id)[t].
    """
    ids = torch.as_tensor(src_ids, dtype=torch.long)
    with torch.no_grad():
        base = score_fn(ids.clone())                                  # (T_dec,)
        columns = []
        for i in range(len(ids)):
            occluded = ids.clone()
            occluded[i] = replace_id
            columns.append(base - score_fn(occluded))                 # (T_dec,)
    return torch.stack(columns, dim=1).detach().cpu().numpy()        # (T_dec, T_enc)


def gradient_x_input(score_fn_emb, embeddings):
    """Importance of every source token for every target token, by gradient x input.

    score_fn_emb : function from a float tensor of source embeddings X (T_enc, d_e) to a 1-D tensor (T_dec,),
                   the log-probability of each (fixed) target token.
    embeddings   : float tensor (T_enc, d_e), the source embeddings; not modified, needs no requires_grad.
    Returns a float NumPy array (T_dec, T_enc): entry [t, i] = sum_k X[i, k] * d score_fn_emb(X)[t] / d X[i, k].
    """
    X = torch.as_tensor(embeddings).detach().clone().requires_grad_(True)   # (T_enc, d_e)
    scores = score_fn_emb(X)                                                 # (T_dec,)
    rows = []
    for t in range(scores.shape[0]):
        (grad,) = torch.autograd.grad(scores[t], X, retain_graph=True, allow_unused=True)
        grad = torch.zeros_like(X) if grad is None else grad                 # (T_enc, d_e)
        rows.append((grad * X).sum(dim=-1))                                  # (T_enc,)
    return torch.stack(rows).detach().cpu().numpy()                         # (T_dec, T_enc)
